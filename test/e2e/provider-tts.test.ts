// Calls spoken by the streaming voices: a real service and real Twilio media streams, the agent's voice
// being ElevenLabs, Cartesia or Deepgram Aura — each a stand-in speaking its provider's protocol with the
// embedded voice. The greeting and the answer come from the stand-in over one connection per call and
// are heard at the caller; a caller who cuts in leaves a transcript that ends at the word heard, by the
// voice's own word times.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rms } from '../../src/audio/pcm.ts';
import { muLawDecode } from '../../src/audio/g711.ts';
import type { TwilioStreamCaller } from '../../src/carriers/sim/twilio-stream.ts';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import { agentFinished, fixtureUlaw, placeInboundCall } from '../helpers/phone.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { replyStream, sseHeaders, startServer, type TestServer } from '../support/http-server.ts';
import { startCartesiaStandIn } from '../speech/tts/cartesia/stand-in.ts';
import { startDeepgramStandIn } from '../speech/tts/deepgram/stand-in.ts';
import { startElevenLabsStandIn, type ElevenLabsStandIn } from '../speech/tts/elevenlabs/stand-in.ts';
import type { StandInServer } from '../speech/tts/stand-ins/common.ts';

const KEY = 'provider-key';
const GREETING = 'Acme here.';
const ANSWER = 'Okay, noted.';
const LONG_GREETING =
  'Welcome to the long greeting of this line, which goes on about opening hours, parking and the weather, so that a caller will surely cut in.';

let t: TestService;
let model: TestServer;
let elevenlabs: ElevenLabsStandIn;
const standIns: Record<string, StandInServer> = {};
const NUMBERS: Record<string, string> = {
  elevenlabs: '+15550300001',
  cartesia: '+15550300002',
  deepgram: '+15550300003',
  talker: '+15550300004',
};

beforeAll(async () => {
  model = await startServer((_req, res) => {
    sseHeaders(res);
    res.end(replyStream(ANSWER));
  });
  elevenlabs = await startElevenLabsStandIn(KEY);
  standIns.elevenlabs = elevenlabs;
  standIns.cartesia = await startCartesiaStandIn(KEY);
  standIns.deepgram = await startDeepgramStandIn(KEY);
  t = await startTestService({}, { recogniserLoaded: true });
  const agent = async (agent_id: string, engine: string, number: string, begin_message: string) => {
    const res = await t.request('POST', '/v2/agents', {
      body: {
        agent_id,
        agent_name: agent_id,
        begin_message,
        inbound_numbers: [number],
        llm: { base_url: `${model.url}/v1`, model: 'scripted' },
        voice: { engine, base_url: standIns[engine]!.url, api_key: KEY },
      },
    });
    expect(res.status, res.text).toBe(201);
  };
  for (const engine of ['elevenlabs', 'cartesia', 'deepgram'])
    await agent(`voice-${engine}`, engine, NUMBERS[engine]!, GREETING);
  await agent('voice-talker', 'elevenlabs', NUMBERS.talker!, LONG_GREETING);
}, 30_000);

afterAll(async () => {
  await t?.stop();
  await model?.close();
  for (const standIn of Object.values(standIns)) await standIn.close();
});

async function record(callId: string): Promise<CallRecord> {
  for (;;) {
    const r = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);
    if (r.call_status === 'ended') return r;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Resolves once `ms` of audio louder than silence has played since frame `after`. */
async function heard(caller: TwilioStreamCaller, after: number, ms: number, timeoutMs = 15_000): Promise<void> {
  const started = Date.now();
  for (;;) {
    const loud = caller.played.slice(after).filter((f) => rms(muLawDecode(f.payload)) > 200).length;
    if (loud * 20 >= ms) return;
    if (Date.now() - started > timeoutMs) throw new Error(`heard ${loud * 20} ms of ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('calls spoken by streaming voices', () => {
  for (const engine of ['elevenlabs', 'cartesia', 'deepgram']) {
    it(`${engine}: the greeting and the answer are heard at the caller, both over the call's one connection`, async () => {
      const standIn = standIns[engine]!;
      const before = standIn.connections;
      const { caller, callId } = await placeInboundCall(t.url, NUMBERS[engine]!);
      await agentFinished(caller, { after: 0, quietMs: 500, timeoutMs: 40_000 });
      const afterGreeting = caller.played.length;
      await caller.speak(fixtureUlaw('01-my-name-is-john'));
      await heard(caller, afterGreeting, 200, 25_000);
      await caller.hangUp();
      const r = await record(callId);
      const agent = r.transcript!.filter((m) => m.role === 'agent');
      expect(agent[0]!.content).toBe(GREETING);
      expect(agent.length).toBeGreaterThanOrEqual(2);
      expect(ANSWER.startsWith(agent[1]!.content)).toBe(true);
      expect(standIn.connections - before).toBe(1);
    }, 60_000);
  }

  it('a caller who cuts in leaves a transcript that ends at the last word whose start they heard', async () => {
    const { caller, callId } = await placeInboundCall(t.url, NUMBERS.talker!);
    const contexts = elevenlabs.spoken.length;
    const cleared = new Promise<void>((resolve) => caller.once('clear', () => resolve()));
    await heard(caller, 0, 1200);
    await caller.speak(fixtureUlaw('02-i-would-like-to'));
    await cleared;
    await caller.hangUp();
    const r = await record(callId);
    const greeting = r.transcript!.find((m) => m.role === 'agent')!;
    expect(LONG_GREETING.startsWith(greeting.content)).toBe(true);
    expect(greeting.content.length).toBeLessThan(LONG_GREETING.length);
    // How long the greeting had played when the caller cut in, on the service's playback clock (the far
    // side's start mark to the cut), against the words' true times in the stand-in's audio.
    const playedMs = (greeting.end_at - greeting.start_at) * 1000;
    const words = elevenlabs.spoken[contexts]!.words;
    const kept = greeting.content.split(/\s+/).filter(Boolean).length;
    // (The record keeps times to the ms: a word starting within 5 ms of the cut may go either way.)
    expect(kept).toBeGreaterThanOrEqual(words.filter((w) => w.start * 1000 < playedMs - 5).length);
    expect(kept).toBeLessThanOrEqual(words.filter((w) => w.start * 1000 < playedMs + 5).length);
    expect(kept).toBeGreaterThan(0);
  }, 60_000);
});
