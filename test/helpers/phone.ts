// A phone call as Twilio would place it against the real service: the voice webhook, the
// TwiML it answers, then the media stream with the parameters the TwiML carries.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { muLawEncode } from '../../src/audio/g711.ts';
import { decodeWav } from '../../src/audio/wav.ts';
import { TwilioStreamCaller, type TwilioStreamOptions } from '../../src/carriers/sim/twilio-stream.ts';
import { twilioSignature } from '../../src/carriers/twilio/signature.ts';
import { TEST_TWILIO_TOKEN, toolAnswered, type TestService } from './service.ts';

const fixtures = join(import.meta.dirname, '..', '..', 'media', 'fixtures');

/** A fixture phrase as the caller's phone sends it: 8 kHz μ-law. */
export function fixtureUlaw(prefix: string): Uint8Array {
  const file = readdirSync(fixtures).find((f) => f.startsWith(prefix) && f.endsWith('.8k-ulaw.wav'));
  if (!file) throw new Error(`no 8 kHz fixture starts with ${prefix}`);
  const pcm = decodeWav(readFileSync(join(fixtures, file)), 8000).samples;
  return muLawEncode(pcm);
}

export function fixtureText(prefix: string): string {
  const list = JSON.parse(readFileSync(join(fixtures, 'transcripts.json'), 'utf8')) as { file: string; text: string }[];
  return list.find((f) => f.file.startsWith(prefix))!.text;
}

export interface PlacedCall {
  caller: TwilioStreamCaller;
  callId: string;
  twiml: string;
}

/** Twilio's voice webhook, signed as Twilio signs it (the service's PUBLIC_URL must be `baseUrl`). */
export function voiceWebhook(
  baseUrl: string,
  params: Record<string, string>,
  authToken = TEST_TWILIO_TOKEN,
): Promise<Response> {
  const url = `${baseUrl}/telephony/twilio/voice`;
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilioSignature(authToken, url, params),
    },
    body: new URLSearchParams(params).toString(),
  });
}

/** Twilio's voice webhook for `to`, then the media stream its TwiML asks for. */
export async function placeInboundCall(
  baseUrl: string,
  to: string,
  from = '+14155550100',
  options: Pick<TwilioStreamOptions, 'history'> & { authToken?: string } = {},
): Promise<PlacedCall> {
  const { authToken, ...streamOptions } = options;
  // Every call has its own CallSid, as on Twilio: the service answers a repeated one with the first call.
  const res = await voiceWebhook(
    baseUrl,
    { CallSid: `CA${randomBytes(16).toString('hex')}`, From: from, To: to, AccountSid: `AC${'0'.repeat(32)}` },
    authToken,
  );
  const twiml = await res.text();
  if (res.status !== 200) throw new Error(`voice webhook answered ${res.status}: ${twiml}`);
  const url = /<Stream url="([^"]+)"/.exec(twiml)?.[1];
  const params = Object.fromEntries(
    [...twiml.matchAll(/<Parameter name="([^"]+)" value="([^"]+)"\/>/g)].map((m) => [m[1]!, m[2]!]),
  );
  if (!url || !params.call_id) throw new Error(`no stream in TwiML: ${twiml}`);
  const caller = new TwilioStreamCaller({ url, customParameters: params, ...streamOptions });
  await caller.connect();
  return { caller, callId: params.call_id, twiml };
}

/** Resolves once agent audio has played and then nothing played for `quietMs`. */
export function agentFinished(
  caller: TwilioStreamCaller,
  options: { quietMs?: number; timeoutMs?: number; after?: number } = {},
): Promise<void> {
  const quietMs = options.quietMs ?? 800;
  const after = options.after ?? caller.played.length;
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const timer = setInterval(() => {
      const last = caller.played.at(-1);
      if (caller.played.length > after && last && caller.now() - last.at > quietMs) {
        clearInterval(timer);
        resolve();
      } else if (Date.now() - started > (options.timeoutMs ?? 30_000) || caller.closed) {
        clearInterval(timer);
        if (caller.closed && caller.played.length > after) resolve();
        else reject(new Error(`the agent did not speak and finish within ${options.timeoutMs ?? 30_000} ms`));
      }
    }, 50);
  });
}

/**
 * The demo agent's booking, as a caller says it: the name, the day and time, then "yes please" to
 * the read-back. Resolves once the booking tool has answered (its long confirmation need not play).
 */
export async function bookWithDemo(t: TestService, caller: TwilioStreamCaller, callId: string): Promise<void> {
  for (const phrase of ['01-my-name-is-john', '14-next-monday-morning']) {
    const before = caller.played.length;
    await caller.speak(fixtureUlaw(phrase));
    await agentFinished(caller, { after: before, timeoutMs: 20_000 });
  }
  await caller.speak(fixtureUlaw('04-yes-please'));
  await toolAnswered(t, callId);
}
