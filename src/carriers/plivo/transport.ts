// Plivo audio streaming ↔ session frames: the line's format is what the start message's
// mediaFormat announces (L16 16 kHz unless the stream says otherwise; xml.ts asks for it), and
// the agent's audio goes back in playAudio messages of the same format. Checkpoints are the
// session's marks (answered by playedStream), clearAudio its barge-in; keypad digits come as dtmf.
// Plivo answers no checkpoint whose audio a clearAudio dropped, but the session counts on every
// mark coming back (call/transport.ts: a clear echoes pending marks): those pending at a clear are
// echoed when Plivo confirms it with clearedAudio.
// Decoding, pacing and hang-up are every phone stream's (phone-stream-transport.ts).
import type { Logger } from 'pino';
import type WebSocket from 'ws';
import type { LineFormat } from '../../audio/line-format.ts';
import { PhoneStreamTransport } from '../phone-stream-transport.ts';
import type { TransportOptions } from '../options.ts';
import {
  parsePlivoMessage,
  plivoCheckpoint,
  plivoClearAudio,
  plivoPlayAudio,
  type PlivoInbound,
} from './media-protocol.ts';

export class PlivoTransport extends PhoneStreamTransport {
  readonly kind = 'plivo' as const;
  private readonly playAudio: (payload: string) => string;
  /** Checkpoints sent and not yet answered, in order. */
  private pending: string[] = [];
  /** Checkpoints pending at each clearAudio not yet confirmed, oldest first. */
  private readonly cleared: string[][] = [];

  constructor(
    socket: WebSocket,
    readonly streamId: string,
    /** Plivo's CallUUID. */
    callUuid: string,
    log: Logger,
    format: LineFormat,
    options: TransportOptions = {},
  ) {
    super(socket, callUuid, log, options, format);
    this.playAudio = plivoPlayAudio(format);
  }

  receive(text: string): void {
    const parsed = parsePlivoMessage(text);
    if (!parsed.ok) return this.malformed(parsed.reason, text);
    this.handle(parsed.message);
  }

  private handle(message: PlivoInbound): void {
    switch (message.event) {
      case 'media':
        // Only the caller's track is the caller's voice.
        if (message.media.track !== undefined && message.media.track !== 'inbound') return;
        this.media(message.media.payload);
        return;
      case 'playedStream':
        this.answered(message.name);
        return;
      case 'clearedAudio':
        for (const name of this.cleared.shift() ?? []) this.handlers?.mark(name);
        return;
      case 'dtmf':
        this.handlers?.dtmf(message.dtmf.digit);
        return;
      case 'stop':
        this.farEnd();
        return;
      default:
        // A start again changes nothing: the stream was set up by the first.
        return;
    }
  }

  private answered(name: string): void {
    const at = this.pending.indexOf(name);
    if (at >= 0) this.pending.splice(at, 1);
    else {
      // Played just before the clear reached Plivo: answered now, not again at clearedAudio.
      const batch = this.cleared.find((names) => names.includes(name));
      if (!batch) return;
      batch.splice(batch.indexOf(name), 1);
    }
    this.handlers?.mark(name);
  }

  override sendMark(name: string): void {
    this.pending.push(name);
    super.sendMark(name);
  }

  override clear(): void {
    this.cleared.push(this.pending);
    this.pending = [];
    super.clear();
  }

  protected mediaText(base64: string): string {
    return this.playAudio(base64);
  }

  protected markText(name: string): string {
    return plivoCheckpoint(this.streamId, name);
  }

  protected clearText(): string {
    return plivoClearAudio(this.streamId);
  }
}
