// A local stand-in for SignalWire's Compatibility API on 127.0.0.1: Twilio's stand-in
// (twilio-standin.ts) with SignalWire's profile, as SignalWire differs from Twilio — the LaML REST
// API under /api/laml/2010-04-01/Accounts/{project_id}/… (basic auth project_id:api_token; the
// service reaches it through SIGNALWIRE_API_BASE), project and call ids that are UUIDs, webhooks
// signed with the project's Signing Key (not the API token) in X-SignalWire-Signature, and a media
// stream in the codec its <Stream codec> asks for: `L16@16000h` is 16-bit PCM at 16 kHz,
// little-endian, with a start message whose mediaFormat says so; no codec is μ-law 8 kHz.
import { randomUUID } from 'node:crypto';
import { TWILIO_DIALECT, type StreamDialect } from '../../src/carriers/sim/twilio-stream.ts';
import { TwilioStandIn, type StandInProfile } from './twilio-standin.ts';

/** Twilio's stream messages with `mediaFormat` in the start message. */
function dialectWith(mediaFormat: { encoding: string; sampleRate: number; channels: number }): StreamDialect {
  return {
    ...TWILIO_DIALECT,
    start: (o) => {
      const start = TWILIO_DIALECT.start(o);
      return { ...start, start: { ...(start.start as Record<string, unknown>), mediaFormat } };
    },
  };
}

const L16_16K = dialectWith({ encoding: 'audio/x-l16', sampleRate: 16000, channels: 1 });

export const SIGNALWIRE_PROFILE: StandInProfile = {
  apiPrefix: '/api/laml',
  voicePath: '/telephony/signalwire/voice',
  signatureHeader: 'x-signalwire-signature',
  newAccountSid: () => randomUUID(),
  newCallSid: () => randomUUID(),
  separateSigningKey: true,
  line: (codec) => {
    if (codec === undefined || codec === 'PCMU@8000h') return { line: undefined, dialect: TWILIO_DIALECT };
    if (codec === 'L16@16000h') return { line: { codec: 'l16le', rate: 16000 }, dialect: L16_16K };
    throw new Error(`the stand-in streams no codec ${codec}`);
  },
};

export class SignalWireStandIn extends TwilioStandIn {
  /** The space the carrier account names; the service reaches every space at SIGNALWIRE_API_BASE (this.url). */
  readonly spaceUrl = 'example.signalwire.com';

  constructor() {
    super(SIGNALWIRE_PROFILE);
  }

  /** The credentials of a carrier account on this stand-in (its first project). */
  credentials(): { space_url: string; project_id: string; api_token: string; signing_key: string } {
    return {
      space_url: this.spaceUrl,
      project_id: this.accountSid,
      api_token: this.authToken,
      signing_key: this.signingKey,
    };
  }
}
