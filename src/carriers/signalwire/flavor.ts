// SignalWire's Compatibility API is Twilio's protocols under SignalWire's names, so Twilio's pieces
// (carriers/twilio/) serve it with this flavor. What differs, as SignalWire documents it:
//
// - Webhooks (the cXML voice webhook, LaML status and <Dial action> callbacks) are Twilio's form
//   posts, signed Twilio's way — base64 HMAC-SHA1 of the full URL followed by every POST parameter
//   name and value in name order (carriers/twilio/signature.ts) — but keyed by the project's
//   Signing Key (API Credentials page of the space; not the API token) and sent in
//   `X-SignalWire-Signature`; its SDKs accept `X-Twilio-Signature` with the same value as an alias
//   for code moved from Twilio, and so does this.
// - <Stream> takes a `codec` attribute (`PCMU@8000h` by default; `L16@16000h`, `L16@24000h`):
//   `L16@16000h` asks for 16-bit linear PCM at 16 kHz both ways, wideband, which the recogniser
//   reads better than 8 kHz μ-law. The messages on the socket are Twilio's (connected, start with
//   customParameters and mediaFormat, media {payload base64}, mark, dtmf, stop in; media, mark,
//   clear out). SignalWire does not state L16's byte order on the stream; its own guide streams
//   L16 payloads to and from OpenAI's Realtime `pcm16` (little-endian) without conversion, so the
//   line is taken as little-endian (audio/line-format.ts `l16le`), whatever mediaFormat names it.
import type { LineFormat } from '../../audio/line-format.ts';
import type { TwilioFlavor } from '../twilio/flavor.ts';

/** Wideband: what the <Stream codec> asks for, and what the line carries unless the start message says otherwise. */
export const SIGNALWIRE_LINE: LineFormat = { codec: 'l16le', rate: 16000 };

export const SIGNALWIRE_FLAVOR: TwilioFlavor = {
  name: 'signalwire',
  label: 'SignalWire',
  signatureHeaders: ['X-SignalWire-Signature', 'X-Twilio-Signature'],
  unsignedMessage:
    'this SignalWire webhook is refused: no SignalWire carrier account holds the number or call it is about, so its signature cannot be checked',
  streamCodec: 'L16@16000h',
  lineFormat: SIGNALWIRE_LINE,
};
