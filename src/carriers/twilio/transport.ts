// Twilio Media Streams ↔ session frames: μ-law 8 kHz on the wire, PCM16 8 kHz 20 ms frames to
// and from the session (the engines take the line's rate, so nothing is resampled per frame). What
// any carrier's JSON stream shares (decoding, pacing, hang-up) is phone-stream-transport.ts's.
// SignalWire's stream is Twilio's messages in the codec its <Stream> asked for (L16 16 kHz): the same
// transport with its kind and line format.
import type { Logger } from 'pino';
import { MULAW_8K, type LineFormat } from '../../audio/line-format.ts';
import type WebSocket from 'ws';
import { PhoneStreamTransport } from '../phone-stream-transport.ts';
import type { TransportOptions } from '../options.ts';
import type { TwilioFlavor } from './flavor.ts';
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
  readonly kind: TwilioFlavor['name'];
  private readonly mediaPrefix: string;

  constructor(
    socket: WebSocket,
    readonly streamSid: string,
    readonly callSid: string,
    log: Logger,
    options: TransportOptions = {},
    /** Whose stream this is and what it carries: Twilio's μ-law 8 kHz unless told. */
    line: { kind?: TwilioFlavor['name']; format?: LineFormat } = {},
  ) {
    super(socket, callSid, log, options, line.format ?? MULAW_8K);
    this.kind = line.kind ?? 'twilio';
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
