// What every carrier's JSON media stream shares once its wire messages are read: caller audio as
// base64 in the line's format (μ-law 8 kHz unless the carrier's stream says otherwise, e.g. L16 at
// 16 kHz for wideband; audio/line-format.ts) decoded into 20 ms PCM16 frames at the line's rate and
// held to the clock (inbound-pace.ts), agent frames encoded back to base64 in the same format, the
// far end's hang-up told to the session once, and the
// socket closed when the service ends the call. Each carrier's transport (twilio/transport.ts,
// telnyx/transport.ts) reads its own messages and says how its media, mark and clear look.
import type { Logger } from 'pino';
import WebSocket from 'ws';
import {
  encodeLineFrame,
  lineEncoding,
  lineFrameBytes,
  LineAudioIn,
  MULAW_8K,
  type LineFormat,
} from '../audio/line-format.ts';
import type { DisconnectionReason } from '../records/record.ts';
import type { CallTransport, SessionNotice, TransportHandlers } from '../call/transport.ts';
import { InboundPace } from './inbound-pace.ts';
import type { TransportOptions } from './options.ts';

export abstract class PhoneStreamTransport implements CallTransport {
  abstract readonly kind: CallTransport['kind'];
  readonly sampleRate: LineFormat['rate'];
  readonly lineEncoding: CallTransport['lineEncoding'];
  protected handlers: TransportHandlers | null = null;
  private readonly inbound: LineAudioIn;
  /** The line's bytes of one outbound frame, reused: base64 copies them out at once. */
  private readonly outFrame: Buffer;
  private scratch: Buffer;
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
    /** What the stream carries both ways, as the carrier's start message or our answer set it. */
    protected readonly format: LineFormat = MULAW_8K,
  ) {
    this.sampleRate = format.rate;
    this.lineEncoding = lineEncoding(format);
    this.inbound = new LineAudioIn(format);
    this.outFrame = Buffer.alloc(lineFrameBytes(format));
    this.scratch = Buffer.alloc(lineFrameBytes(format));
    this.pace = new InboundPace(format.rate, options.now);
    socket.on('close', () => this.farEnd());
    socket.on('error', (error) => this.log.warn({ err: error }, 'media socket error'));
    // Closed while its start was checked against the store: the far end is gone already.
    if (socket.readyState === WebSocket.CLOSING || socket.readyState === WebSocket.CLOSED) this.farEnd();
  }

  /** Messages after the start, as the route hands them on. */
  abstract receive(text: string): void;
  /** The carrier's media message carrying `base64` audio in the line's format. */
  protected abstract mediaText(base64: string): string;
  protected abstract markText(name: string): string;
  protected abstract clearText(): string;

  /** A malformed message: counted, logged, dropped. */
  protected malformed(reason: string, text: string): void {
    this.dropped++;
    this.log.warn({ reason, sample: text.slice(0, 120) }, 'malformed media stream message dropped');
  }

  /** Base64 caller audio in the line's format, any length: decoded, framed, held to the clock. */
  protected media(payload: string): void {
    // Decoded into a reused buffer: the line's decoder copies it into the session's frame.
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
    this.socket.send(this.mediaText(encodeLineFrame(this.format, frame, this.outFrame).toString('base64')));
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
