// Telnyx media streaming ↔ session frames: PCMU 8 kHz on the wire both ways (the <Stream>'s
// bidirectionalCodec, texml.ts), PCM16 8 kHz 20 ms frames to and from the session. Media frames
// are put back in chunk order before they are decoded (media-protocol.ts); decoding, pacing and
// hang-up are every phone stream's (phone-stream-transport.ts).
import type { Logger } from 'pino';
import type WebSocket from 'ws';
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
  ) {
    super(socket, callControlId, log, options);
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
