// Twilio Media Streams ↔ session frames: μ-law 8 kHz on the wire, PCM16 8 kHz 20 ms frames to
// and from the session (the engines take the line's rate, so nothing is resampled per frame). What
// any carrier's JSON stream shares (decoding, pacing, hang-up) is phone-stream-transport.ts's.
import type { Logger } from 'pino';
import type WebSocket from 'ws';
import { PhoneStreamTransport } from '../phone-stream-transport.ts';
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

export class TwilioTransport extends PhoneStreamTransport {
  readonly kind = 'twilio' as const;
  private readonly mediaPrefix: string;

  constructor(
    socket: WebSocket,
    readonly streamSid: string,
    readonly callSid: string,
    log: Logger,
    options: TransportOptions = {},
  ) {
    super(socket, callSid, log, options);
    this.mediaPrefix = twilioMediaPrefix(streamSid);
  }

  /** Messages after `start`, as the route hands them on. */
  receive(text: string): void {
    const payload = canonicalMediaPayload(text);
    if (payload !== null) {
      this.media(payload);
      return;
    }
    const parsed = parseTwilioMessage(text);
    if (!parsed.ok) return this.malformed(parsed.reason, text);
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

  protected mediaText(base64: string): string {
    return this.mediaPrefix + base64 + TWILIO_MEDIA_SUFFIX;
  }

  protected markText(name: string): string {
    return twilioMark(this.streamSid, name);
  }

  protected clearText(): string {
    return twilioClear(this.streamSid);
  }
}
