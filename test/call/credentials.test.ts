// A call resolves the provider credentials its agent names when it starts: its recogniser, voice and model get
// the credential's key (and address), in memory only; a credential deleted since the agent version was saved ends
// the call with a coded reason instead of crashing it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInstantModel, stubSpeechEngines } from '../../bench/stub-engines.ts';
import type { AgentConfig } from '../../src/agents/schema.ts';
import { CredentialResponse } from '../../src/credentials/schema.ts';
import { CreateWebCallResponse } from '../../src/http/routes/web-calls.ts';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import type { SpeechEngineProvider } from '../../src/speech/types.ts';
import { placeInboundCall } from '../helpers/phone.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { WebCallClient } from '../helpers/web-client.ts';

/** Stub engines that keep the configuration every recogniser and voice was made from. */
function recordingProvider() {
  const stub = stubSpeechEngines();
  const made = { stt: [] as AgentConfig['stt'][], voice: [] as AgentConfig['voice'][] };
  const provider: SpeechEngineProvider = {
    vad: stub.vad,
    stt: (config) => (made.stt.push(config), stub.stt(config)),
    tts: (config) => (made.voice.push(config), stub.tts(config)),
    close: () => stub.close(),
  };
  return { provider, made };
}

const NUMBER = '+15550300077';
let speech: ReturnType<typeof recordingProvider>;
let model: Awaited<ReturnType<typeof startInstantModel>>;
const modelAuthorizations: (string | undefined)[] = [];
let t: TestService;

beforeAll(async () => {
  speech = recordingProvider();
  model = await startInstantModel();
  model.server.on('request', (req: { headers: Record<string, string | undefined> }) =>
    modelAuthorizations.push(req.headers.authorization),
  );
  t = await startTestService({}, { speech: speech.provider });
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await model?.close();
});

async function credential(body: Record<string, unknown>) {
  const res = await t.request('POST', '/v2/provider-credentials', { body });
  expect(res.status, res.text).toBe(201);
  return CredentialResponse.parse(res.body);
}

async function until<T>(get: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const value = await get();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`never: ${what}`);
}

const record = async (callId: string): Promise<CallRecord> =>
  CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);

describe('credentials resolved when a call starts', () => {
  it("gives the call's recogniser, voice and model the named credentials' keys and addresses (a credential's key wins over the section's own); the stored agent keeps only the names", async () => {
    await credential({ provider: 'openai', name: 'hearing', api_key: 'sk-stt-from-credential' });
    await credential({
      provider: 'openai',
      name: 'speaking',
      api_key: 'sk-voice-from-credential',
      base_url: 'http://127.0.0.1:9/voice/v1',
    });
    await credential({ provider: 'openai', name: 'thinking', api_key: 'sk-llm-from-credential' });
    const created = await t.request('POST', '/v2/agents', {
      body: {
        agent_id: 'resolved',
        agent_name: 'Resolved',
        begin_message: 'Hi.',
        inbound_numbers: [NUMBER],
        llm: { base_url: model.url, model: 'stub', api_key: 'sk-inline-llm', credential: 'thinking' },
        stt: { engine: 'openai', base_url: 'http://127.0.0.1:9/stt/v1', credential: 'hearing' },
        voice: { engine: 'openai', voice_id: 'alloy', credential: 'speaking' },
      },
    });
    expect(created.status, created.text).toBe(201);
    const { caller, callId } = await placeInboundCall(t.url, NUMBER);
    await until(async () => ((await record(callId)).call_status === 'ongoing' ? true : undefined), 'connected');
    const stt = speech.made.stt.at(-1)!;
    const voice = speech.made.voice.at(-1)!;
    // The section's own address stays where the credential has none; the credential's wins where it has one.
    expect(stt).toMatchObject({
      engine: 'openai',
      api_key: 'sk-stt-from-credential',
      base_url: 'http://127.0.0.1:9/stt/v1',
    });
    expect(voice).toMatchObject({
      engine: 'openai',
      api_key: 'sk-voice-from-credential',
      base_url: 'http://127.0.0.1:9/voice/v1',
    });
    // A keypad entry is a turn of the caller's: the model is asked, with the credential's key.
    caller.sendDtmf('4');
    caller.sendDtmf('#');
    await until(async () => (modelAuthorizations.length > 0 ? true : undefined), 'the model was asked');
    expect(modelAuthorizations[0]).toBe('Bearer sk-llm-from-credential');
    await caller.hangUp();
    await until(async () => ((await record(callId)).call_status === 'ended' ? true : undefined), 'ended');
    // In memory only: the stored version still names the credentials and holds no key of theirs.
    const stored = (
      t.service.db!.prepare("SELECT config FROM agent_versions WHERE agent_id = 'resolved'").get() as {
        config: string;
      }
    ).config;
    expect(JSON.parse(stored)).toMatchObject({
      stt: { credential: 'hearing' },
      voice: { credential: 'speaking' },
      llm: { credential: 'thinking' },
    });
    expect(JSON.parse(stored)).not.toHaveProperty('stt.api_key');
    expect(JSON.parse(stored)).not.toHaveProperty('voice.api_key');
    const text = `${stored}${JSON.stringify(await record(callId))}${t.logs.join('\n')}`;
    for (const key of ['sk-stt-from-credential', 'sk-voice-from-credential', 'sk-llm-from-credential'])
      expect(text).not.toContain(key);
  }, 60_000);

  it('ends a call whose agent version names a credential deleted since it was saved: error, flow_error, a message naming the field, and the service goes on', async () => {
    const gone = await credential({ provider: 'openai', name: 'gone-soon', api_key: 'sk-gone' });
    const llm = { base_url: model.url, model: 'stub' };
    await t.request('POST', '/v2/agents', {
      body: {
        agent_id: 'pinned',
        agent_name: 'Pinned',
        begin_message: 'Hi.',
        llm: { ...llm, credential: 'gone-soon' },
      },
    });
    // Version 2, published, names no credential: the credential may go, though version 1 still names it.
    await t.request('PATCH', '/v2/agents/pinned', { body: { llm } });
    await t.request('POST', '/v2/agents/pinned/publish');
    expect((await t.request('DELETE', `/v2/provider-credentials/${gone.provider_credential_id}`)).status).toBe(204);

    const webCall = async (agentVersion: number) => {
      const res = await t.request('POST', '/v2/web-calls', {
        body: { agent_id: 'pinned', agent_version: agentVersion },
      });
      expect(res.status, res.text).toBe(201);
      const { call_id, access_token, websocket_url } = CreateWebCallResponse.parse(res.body);
      const client = new WebCallClient(websocket_url);
      await client.opened;
      client.send({ type: 'start', access_token });
      return { callId: call_id, client };
    };
    const pinned = await webCall(1);
    await pinned.client.closed;
    const ended = await until(async () => {
      const r = await record(pinned.callId);
      return r.call_status === 'registered' ? undefined : r;
    }, 'the pinned call ended');
    expect(ended).toMatchObject({ call_status: 'error', disconnection_reason: 'flow_error' });
    expect(ended.disconnection_message).toBe(
      'llm.credential names the provider credential "gone-soon", which the organization no longer has',
    );
    expect(t.logs.some((line) => line.includes('"code":"CREDENTIAL_NOT_FOUND"'))).toBe(true);

    // The production version names none: its call runs.
    const production = await webCall(2);
    await production.client.waitFor((e) => e.type === 'call_started');
    production.client.send({ type: 'hangup' });
    await production.client.closed;
  }, 60_000);
});
