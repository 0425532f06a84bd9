// Vonage's media WebSocket ↔ session frames: L16 (16-bit little-endian PCM) at the rate the
// connect asked for (16 kHz, wideband) as binary messages both ways, 20 ms each, and the text events
// and actions of media-protocol.ts. Framing, pacing of caller audio and hang-up are every phone
// stream's (phone-stream-transport.ts); only the wire differs. Vonage's notify stands for a mark:
// the transport keeps the marks not yet played, and a clear (barge-in) reports them played at once,
// as the session expects of every line; a notify that comes for one afterwards is not reported twice.
import type { Logger } from 'pino';
import type WebSocket from 'ws';
import type { LineFormat } from '../../audio/line-format.ts';
import type { TransportOptions } from '../options.ts';
import { PhoneStreamTransport } from '../phone-stream-transport.ts';
import { parseVonageEvent, VONAGE_CLEAR, vonageNotify } from './media-protocol.ts';

export const VONAGE_WIDEBAND: LineFormat = { codec: 'l16le', rate: 16000 };

export class VonageTransport extends PhoneStreamTransport {
  readonly kind = 'vonage' as const;
  /** Marks sent and not yet played, oldest first. */
  private readonly pendingMarks: string[] = [];

  constructor(
    socket: WebSocket,
    /** Vonage's uuid of the call (its phone leg). */
    callUuid: string,
    log: Logger,
    options: TransportOptions = {},
    format: LineFormat = VONAGE_WIDEBAND,
  ) {
    super(socket, callUuid, log, options, format);
  }

  /** A binary message: caller audio. */
  receiveAudio(bytes: Uint8Array): void {
    this.lineAudio(bytes);
  }

  /** A text message: one of Vonage's events. */
  receive(text: string): void {
    const parsed = parseVonageEvent(text);
    if (!parsed.ok) return this.malformed(parsed.reason, text);
    const message = parsed.message;
    switch (message.event) {
      case 'websocket:dtmf':
        this.handlers?.dtmf(message.digit.toUpperCase());
        return;
      case 'websocket:notify': {
        const at = message.mark === undefined ? -1 : this.pendingMarks.indexOf(message.mark);
        if (at < 0) return;
        // Vonage plays in order: the marks before this one have played too.
        for (const name of this.pendingMarks.splice(0, at + 1)) this.handlers?.mark(name);
        return;
      }
      default:
        return;
    }
  }

  override sendMark(name: string): void {
    this.pendingMarks.push(name);
    super.sendMark(name);
  }

  override clear(): void {
    super.clear();
    const dropped = this.pendingMarks.splice(0);
    if (dropped.length > 0) queueMicrotask(() => dropped.forEach((name) => this.handlers?.mark(name)));
  }

  /** Vonage takes the frame as a binary message as it is (a copy: `line` is reused for the next frame). */
  protected override sendLineFrame(line: Buffer): void {
    this.socket.send(Buffer.from(line), { binary: true });
  }

  protected mediaText(): string {
    throw new Error('Vonage media goes as binary messages (sendLineFrame), never as text');
  }

  protected markText(name: string): string {
    return vonageNotify(name);
  }

  protected clearText(): string {
    return VONAGE_CLEAR;
  }
}
