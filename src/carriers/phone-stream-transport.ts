// What every carrier's JSON media stream shares once its wire messages are read: caller audio as
// base64 μ-law 8 kHz decoded into 20 ms PCM16 frames and held to the clock (inbound-pace.ts), agent
// frames encoded back to base64 μ-law, the far end's hang-up told to the session once, and the
// socket closed when the service ends the call. Each carrier's transport (twilio/transport.ts,
// telnyx/transport.ts) reads its own messages and says how its media, mark and clear look.
import type { Logger } from 'pino';
import WebSocket from 'ws';
import { muLawEncode } from '../audio/g711.ts';
import { CarrierAudioIn } from '../audio/telephony.ts';
import type { DisconnectionReason } from '../records/record.ts';
import type { CallTransport, SessionNotice, TransportHandlers } from '../call/transport.ts';
import { InboundPace } from './inbound-pace.ts';
import type { TransportOptions } from './options.ts';

const RATE = 8000;

export abstract class PhoneStreamTransport implements CallTransport {
  abstract readonly kind: CallTransport['kind'];
  readonly sampleRate = RATE;
  readonly lineEncoding = 'mulaw' as const;
  protected handlers: TransportHandlers | null = null;
  private readonly inbound = new CarrierAudioIn({ carrierRate: RATE, internalRate: RATE });
  /** μ-law of one outbound frame, reused: base64 copies it out at once. */
  private readonly ulaw = Buffer.alloc(RATE / 50);
  private scratch = Buffer.alloc(RATE / 50);
  private hungUp = false;
  /** The far end hung up or its socket closed (not this side closing it). */
  private farEndGone = false;
  private readonly pace: InboundPace;
  /** Malformed frames seen (logged and dropped). */
  dropped = 0;

  constructor(
    protected readonly socket: WebSocket,
    readonly carrierCallId: string,
    protected readonly log: Logger,
    private readonly options: TransportOptions = {},
  ) {
    this.pace = new InboundPace(RATE, options.now);
    socket.on('close', () => this.farEnd());
    socket.on('error', (error) => this.log.warn({ err: error }, 'media socket error'));
    // Closed while its start was checked against the store: the far end is gone already.
    if (socket.readyState === WebSocket.CLOSING || socket.readyState === WebSocket.CLOSED) this.farEnd();
  }

  /** Messages after the start, as the route hands them on. */
  abstract receive(text: string): void;
  /** The carrier's media message carrying `base64` μ-law. */
  protected abstract mediaText(base64: string): string;
  protected abstract markText(name: string): string;
  protected abstract clearText(): string;

  /** A malformed message: counted, logged, dropped. */
  protected malformed(reason: string, text: string): void {
    this.dropped++;
    this.log.warn({ reason, sample: text.slice(0, 120) }, 'malformed media stream message dropped');
  }

  /** Base64 μ-law caller audio, any length: decoded, framed, held to the clock. */
  protected media(payload: string): void {
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

  protected farEnd(): void {
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
    this.socket.send(this.mediaText(bytes.toString('base64', 0, frame.length)));
  }

  sendMark(name: string): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(this.markText(name));
  }

  clear(): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(this.clearText());
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
