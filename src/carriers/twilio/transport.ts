// Twilio Media Streams ↔ session frames: μ-law 8 kHz on the wire, PCM16 8 kHz 20 ms frames to
// and from the session (the engines take the line's rate, so nothing is resampled per frame).
import type { Logger } from 'pino';
import WebSocket from 'ws';
import { muLawEncode } from '../../audio/g711.ts';
import { CarrierAudioIn } from '../../audio/telephony.ts';
import type { DisconnectionReason } from '../../records/record.ts';
import type { CallTransport, SessionNotice, TransportHandlers } from '../../call/transport.ts';
import { InboundPace } from '../inbound-pace.ts';
import type { TransportOptions } from '../options.ts';
import {
  canonicalMediaPayload,
  parseTwilioMessage,
  twilioClear,
  twilioMark,
  twilioMediaPrefix,
  TWILIO_MEDIA_SUFFIX,
  type TwilioInbound,
} from './media-protocol.ts';

const RATE = 8000;

export class TwilioTransport implements CallTransport {
  readonly kind = 'twilio' as const;
  readonly sampleRate = RATE;
  readonly lineEncoding = 'mulaw' as const;
  private handlers: TransportHandlers | null = null;
  private readonly inbound = new CarrierAudioIn({ carrierRate: RATE, internalRate: RATE });
  /** μ-law of one outbound frame, reused: base64 copies it out at once. */
  private readonly ulaw = Buffer.alloc(RATE / 50);
  private readonly mediaPrefix: string;
  private scratch = Buffer.alloc(RATE / 50);
  private hungUp = false;
  /** The far end hung up or its socket closed (not this side closing it). */
  private farEndGone = false;
  private readonly pace: InboundPace;
  /** Malformed frames seen (logged and dropped). */
  dropped = 0;
  readonly carrierCallId: string;

  constructor(
    private readonly socket: WebSocket,
    readonly streamSid: string,
    readonly callSid: string,
    private readonly log: Logger,
    private readonly options: TransportOptions = {},
  ) {
    this.pace = new InboundPace(RATE, options.now);
    this.carrierCallId = callSid;
    this.mediaPrefix = twilioMediaPrefix(streamSid);
    socket.on('close', () => this.farEnd());
    socket.on('error', (error) => this.log.warn({ err: error }, 'media socket error'));
    // Closed while its start was checked against the store: the far end is gone already.
    if (socket.readyState === WebSocket.CLOSING || socket.readyState === WebSocket.CLOSED) this.farEnd();
  }

  /** Messages after `start`, as the route hands them on. */
  receive(text: string): void {
    const payload = canonicalMediaPayload(text);
    if (payload !== null) {
      this.media(payload);
      return;
    }
    const parsed = parseTwilioMessage(text);
    if (!parsed.ok) {
      this.dropped++;
      this.log.warn({ reason: parsed.reason, sample: text.slice(0, 120) }, 'malformed media stream message dropped');
      return;
    }
    this.handle(parsed.message);
  }

  private handle(message: TwilioInbound): void {
    switch (message.event) {
      case 'media':
        this.media(message.media.payload);
        return;
      case 'mark':
        this.handlers?.mark(message.mark.name);
        return;
      case 'dtmf':
        this.handlers?.dtmf(message.dtmf.digit);
        return;
      case 'stop':
        this.farEnd();
        return;
      default:
        return;
    }
  }

  private media(payload: string): void {
    // Decoded into a reused buffer: the μ-law decoder copies it into the session's frame.
    if (payload.length * 0.75 > this.scratch.length) this.scratch = Buffer.alloc(Math.ceil(payload.length * 0.75));
    const n = this.scratch.write(payload, 'base64');
    if (n === 0) return;
    for (const frame of this.inbound.push(this.scratch.subarray(0, n))) {
      const verdict = this.pace.admit(frame.length);
      if (verdict === 'accept') this.handlers?.audio(frame);
      else if (verdict === 'close') return this.cutOff();
    }
  }

  /** A stream that keeps sending audio faster than real time is closed as a policy violation. */
  private cutOff(): void {
    if (this.socket.readyState !== WebSocket.OPEN) return;
    this.log.warn('media stream closed: its audio kept running ahead of real time');
    this.socket.close(1008, 'audio ahead of real time');
  }

  private farEnd(): void {
    if (this.hungUp) return;
    this.hungUp = true;
    this.farEndGone = true;
    this.handlers?.hangup();
  }

  attach(handlers: TransportHandlers): void {
    this.handlers = handlers;
    // The caller hung up before the session took the line (its record was being read): it hears so now.
    if (this.farEndGone) queueMicrotask(() => handlers.hangup());
  }

  sendAudio(frame: Int16Array): void {
    if (this.socket.readyState !== WebSocket.OPEN) {
      this.options.onFrameDropped?.();
      return;
    }
    const bytes = frame.length <= this.ulaw.length ? this.ulaw : Buffer.alloc(frame.length);
    muLawEncode(frame, bytes);
    this.socket.send(this.mediaPrefix + bytes.toString('base64', 0, frame.length) + TWILIO_MEDIA_SUFFIX);
  }

  sendMark(name: string): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(twilioMark(this.streamSid, name));
  }

  clear(): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(twilioClear(this.streamSid));
  }

  notify(_notice: SessionNotice): void {
    // A phone shows nothing; the browser transport renders these.
  }

  close(_reason: DisconnectionReason): void {
    this.hungUp = true;
    if (this.socket.readyState === WebSocket.OPEN || this.socket.readyState === WebSocket.CONNECTING)
      this.socket.close(1000, 'call ended');
  }
}
