// What differs between Twilio and a carrier that speaks Twilio's protocols (SignalWire's
// Compatibility API: cXML is TwiML, its LaML REST API has Twilio's shapes, its media stream
// Twilio's messages): the name its routes, records and transport carry, the header its webhooks are
// signed in, the <Stream> codec it is asked for. Twilio's own pieces here (voice-webhook.ts,
// status-webhooks.ts, media-route.ts, transport.ts, dialer.ts, twiml.ts) take one of these;
// carriers/signalwire/ gives its own.
import { MULAW_8K, type LineFormat } from '../../audio/line-format.ts';

export interface TwilioFlavor {
  /** The carrier's name: its routes (/telephony/{name}/…, /media/{name}), carrier_calls, the transport's kind. */
  readonly name: 'twilio' | 'signalwire';
  /** How people write it, in messages. */
  readonly label: string;
  /** The headers a webhook's signature may come in, the first preferred; the same HMAC in each. */
  readonly signatureHeaders: readonly string[];
  /** What an unset signing key refuses webhooks with (a configuration hint). */
  readonly unsignedMessage: string;
  /** The <Stream codec> asked for; undefined: the carrier's default (μ-law 8 kHz). */
  readonly streamCodec: string | undefined;
  /** What the stream carries when its start message does not say (the codec asked for). */
  readonly lineFormat: LineFormat;
}

export const TWILIO_FLAVOR: TwilioFlavor = {
  name: 'twilio',
  label: 'Twilio',
  signatureHeaders: ['X-Twilio-Signature'],
  unsignedMessage:
    'carrier webhooks are refused: TWILIO_AUTH_TOKEN is not set, so no signature can be checked (TWILIO_SIGNATURE=off accepts them unchecked, for local experiments)',
  streamCodec: undefined,
  lineFormat: MULAW_8K,
};

export const voicePath = (flavor: TwilioFlavor) => `/telephony/${flavor.name}/voice`;
export const statusPath = (flavor: TwilioFlavor) => `/telephony/${flavor.name}/status`;
/** Where the carrier tells how a transfer's <Dial action> went, and when the destination answered (leg=answered). */
export const transferPath = (flavor: TwilioFlavor) => `/telephony/${flavor.name}/transfer`;
export const mediaPath = (flavor: TwilioFlavor) => `/media/${flavor.name}`;
