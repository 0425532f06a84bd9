// Calls heard by the streaming recognisers: a phone call through a Deepgram stand-in (μ-law at
// 8 kHz, as the line carried it) and a browser call through an AssemblyAI stand-in (PCM16 at
// 16 kHz), each reading the caller's recorded words with the embedded recogniser. The service
// reaches them on 127.0.0.1 because the test service's EGRESS_ALLOW opens loopback.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeWav } from '../../src/audio/wav.ts';
import { CreateWebCallResponse } from '../../src/http/routes/web-calls.ts';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import { agentFinished, fixtureText, fixtureUlaw, placeInboundCall } from '../helpers/phone.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { WebCallClient } from '../helpers/web-client.ts';
import { startAssemblyAiStandIn, type AssemblyAiStandIn } from '../speech/stt/assemblyai/stand-in.ts';
import { startDeepgramStandIn, type DeepgramStandIn } from '../speech/stt/deepgram/stand-in.ts';
import { StandInEar } from '../speech/stt/stand-in-ear.ts';

const NUMBER = '+15550100071';
const DEEPGRAM_KEY = 'dg-e2e-key';
const ASSEMBLYAI_KEY = 'aai-e2e-key';
/** The Deepgram agent's stt.phrases, sent as keyterms. */
const KEYTERMS = ['John'];
let t: TestService;
let deepgram: DeepgramStandIn;
let assemblyai: AssemblyAiStandIn;

const fixtures = join(import.meta.dirname, '..', '..', 'media', 'fixtures');
const phrase16k = (prefix: string) =>
  decodeWav(
    readFileSync(
      join(
        fixtures,
        readdirSync(fixtures).find((f) => f.startsWith(prefix) && f.endsWith('.16k.wav'))!,
      ),
    ),
    16000,
  ).samples;

/** Words of the fixture's own transcript that the caller's recognised turn shares. */
const sharedWords = (heard: string, prefix: string): string[] => {
  const said = new Set(
    fixtureText(prefix)
      .toLowerCase()
      .match(/[a-z']+/g),
  );
  return (heard.toLowerCase().match(/[a-z']+/g) ?? []).filter((w) => said.has(w));
};

async function recordUntil(callId: string, until: (r: CallRecord) => boolean): Promise<CallRecord> {
  for (let i = 0; i < 300; i++) {
    const r = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);
    if (until(r)) return r;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the call record never reached the expected state');
}

beforeAll(async () => {
  [t, deepgram, assemblyai] = await Promise.all([
    startTestService(),
    startDeepgramStandIn(DEEPGRAM_KEY),
    startAssemblyAiStandIn(ASSEMBLYAI_KEY),
  ]);
  // The stand-ins' recogniser loads its models once: before the calls, not during their first turn. The Deepgram
  // call's keyterms included: warmed without them, the stand-in loaded their decoder while the caller spoke and, on a
  // loaded machine, answered Finalize past the service's 3 s final-text deadline.
  await Promise.all([StandInEar.warm(8000, KEYTERMS), StandInEar.warm(16000)]);
  const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown>;
  const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
  const phone = await t.request('POST', '/v2/agents', {
    body: {
      ...config,
      agent_id: 'heard-by-deepgram',
      begin_message: '',
      inbound_numbers: [NUMBER],
      stt: { engine: 'deepgram', base_url: deepgram.url, api_key: DEEPGRAM_KEY, language: 'en-US', phrases: KEYTERMS },
    },
  });
  expect(phone.status).toBe(201);
  // The key is write-only: never given back.
  expect((phone.body as { stt: Record<string, unknown> }).stt.api_key).toBeUndefined();
  const web = await t.request('POST', '/v2/agents', {
    body: {
      ...config,
      agent_id: 'heard-by-assemblyai',
      begin_message: '',
      stt: { engine: 'assemblyai', base_url: assemblyai.url, api_key: ASSEMBLYAI_KEY, language: 'en-US' },
    },
  });
  expect(web.status).toBe(201);
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await Promise.all([deepgram?.close(), assemblyai?.close()]);
});

describe('calls heard by streaming recognisers', () => {
  it("a phone call's caller is heard through Deepgram: μ-law at 8 kHz goes out, the words land in the transcript, the socket closes with the call", async () => {
    const { caller, callId } = await placeInboundCall(t.url, NUMBER);
    await caller.speak(fixtureUlaw('01-my-name-is-john'));
    await caller.pause(1500);
    // The agent answers the turn it heard; then the caller hangs up.
    await agentFinished(caller, { after: 0, timeoutMs: 20_000 });
    await caller.hangUp();
    const record = await recordUntil(callId, (r) => r.call_status === 'ended');
    const user = record.transcript!.find((m) => m.role === 'user')!;
    expect(sharedWords(user.content, '01-my-name-is-john').length, user.content).toBeGreaterThanOrEqual(3);
    const connection = deepgram.connections.at(-1)!;
    expect(connection.headers.authorization).toBe(`Token ${DEEPGRAM_KEY}`);
    expect(connection.url.searchParams.get('encoding')).toBe('mulaw');
    expect(connection.url.searchParams.get('sample_rate')).toBe('8000');
    expect(connection.url.searchParams.getAll('keyterm')).toEqual(KEYTERMS);
    await expect.poll(() => connection.controls.at(-1)?.type, { timeout: 10_000 }).toBe('CloseStream');
  }, 45_000);

  it("a browser call's caller is heard through AssemblyAI: PCM16 at 16 kHz goes out, the words land in the transcript", async () => {
    const res = await t.request('POST', '/v2/web-calls', { body: { agent_id: 'heard-by-assemblyai' } });
    expect(res.status).toBe(201);
    const { call_id, access_token, websocket_url } = CreateWebCallResponse.parse(res.body);
    const client = new WebCallClient(websocket_url);
    await client.opened;
    client.send({ type: 'start', access_token });
    await client.waitFor((e) => e.type === 'call_started');
    await client.silence(300);
    await client.speak(phrase16k('01-my-name-is-john'));
    await client.silence(1500);
    const user = await client.waitFor((e) => e.type === 'transcript' && e.role === 'user' && e.final === true, 25_000);
    expect(sharedWords(String(user.text), '01-my-name-is-john').length).toBeGreaterThanOrEqual(2);
    client.send({ type: 'hangup' });
    await client.closed;
    const record = await recordUntil(call_id, (r) => r.call_status === 'ended');
    expect(record.transcript!.find((m) => m.role === 'user')?.content).toBe(String(user.text));
    const connection = assemblyai.connections.at(-1)!;
    expect(connection.headers.authorization).toBe(ASSEMBLYAI_KEY);
    expect(connection.url.searchParams.get('encoding')).toBe('pcm_s16le');
    expect(connection.url.searchParams.get('sample_rate')).toBe('16000');
    await expect.poll(() => connection.controls.at(-1)?.type, { timeout: 10_000 }).toBe('Terminate');
  }, 45_000);
});
