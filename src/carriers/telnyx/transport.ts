// Telnyx media streaming ↔ session frames: on the wire, the codec the start's media_format
// announces (media-protocol.ts: PCMU or PCMA at 8 kHz, G.722 at 16 kHz, L16 at 8 or 16 kHz) both
// ways — the agent answers in the codec the caller is heard in, which the <Stream>'s
// bidirectionalCodec asks for (texml.ts) — and PCM16 20 ms frames at the line's rate to and from
// the session, so a G.722 leg gives the recogniser 16 kHz. Media frames are put back in chunk order
// before they are decoded; decoding, pacing and hang-up are every phone stream's
// (phone-stream-transport.ts).
import type { Logger } from 'pino';
import type WebSocket from 'ws';
import { MULAW_8K, type LineFormat } from '../../audio/line-format.ts';
import { PhoneStreamTransport } from '../phone-stream-transport.ts';
import type { TransportOptions } from '../options.ts';
import {
  MediaReorder,
  mediaOrder,
  parseTelnyxMessage,
  TELNYX_CLEAR,
  telnyxMark,
  telnyxMedia,
  type TelnyxInbound,
} from './media-protocol.ts';

export class TelnyxTransport extends PhoneStreamTransport {
  readonly kind = 'telnyx' as const;
  private readonly reorder = new MediaReorder<string>((payload) => this.media(payload));

  constructor(
    socket: WebSocket,
    readonly streamId: string,
    /** Telnyx's call_control_id (TeXML's CallSid). */
    callControlId: string,
    log: Logger,
    options: TransportOptions = {},
    /** What the start's media_format announced (telnyxLineFormat). */
    format: LineFormat = MULAW_8K,
  ) {
    super(socket, callControlId, log, options, format);
  }

  /** Media frames dropped for arriving after their place was given up. */
  get lateFrames(): number {
    return this.reorder.late;
  }

  receive(text: string): void {
    const parsed = parseTelnyxMessage(text);
    if (!parsed.ok) return this.malformed(parsed.reason, text);
    this.handle(parsed.message);
  }

  private handle(message: TelnyxInbound): void {
    switch (message.event) {
      case 'media':
        // Only the caller's track is the caller: with both_tracks the agent's own audio would come back too.
        if (message.media.track !== undefined && message.media.track !== 'inbound') return;
        this.reorder.push(mediaOrder(message), message.media.payload);
        return;
      case 'mark':
        this.handlers?.mark(message.mark.name);
        return;
      case 'dtmf':
        this.handlers?.dtmf(message.dtmf.digit);
        return;
      case 'error':
        this.log.warn({ code: message.payload.code, title: message.payload.title }, 'telnyx media stream error');
        return;
      case 'stop':
        this.farEnd();
        return;
      default:
        return;
    }
  }

  protected mediaText(base64: string): string {
    return telnyxMedia(base64);
  }

  protected markText(name: string): string {
    return telnyxMark(name);
  }

  protected clearText(): string {
    return TELNYX_CLEAR;
  }
}
