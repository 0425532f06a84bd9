// A browser call over /media/web with the embedded engines and the demo model.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { decodeWav } from '../../src/audio/wav.ts';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import { CreateWebCallResponse } from '../../src/http/routes/web-calls.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { WebCallClient } from '../helpers/web-client.ts';
import { rms } from '../../src/audio/pcm.ts';
import { decodeOggOpus, envelopeCorrelation } from '../helpers/ogg-opus.ts';
import { WEB_TRANSFER_REFUSAL } from '../../src/call/model/prompts.ts';
import { DEMO_NO_TRANSFER } from '../../src/demo/script.ts';

// Calls are real time and wait on the line most of it: two at a time, as test/carriers/conformance-suite.ts
// runs them (more, on a small machine, starve the recogniser).
vi.setConfig({ maxConcurrency: 2 });

let t: TestService;
beforeAll(async () => {
  t = await startTestService({}, { recogniserLoaded: true });
});
afterAll(async () => t?.stop());

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

async function record(
  callId: string,
  until: (r: CallRecord) => boolean = (r) => !['registered', 'ongoing'].includes(r.call_status),
) {
  for (let i = 0; i < 300; i++) {
    const r = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);
    if (until(r)) return r;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('record never reached the state');
}

async function webCall() {
  const res = await t.request('POST', '/v2/web-calls', { body: { agent_id: 'demo', metadata: { page: 'test' } } });
  expect(res.status).toBe(201);
  return CreateWebCallResponse.parse(res.body);
}

describe.concurrent('browser calls', () => {
  it('runs a call from a single-use token: greeting, the caller’s words, the reply, live events, keypad digits, and user_hangup', async () => {
    const { call_id, access_token, websocket_url } = await webCall();
    expect(websocket_url).toBe(`${t.service.publicUrl.replace('http', 'ws')}/media/web`);
    const client = new WebCallClient(websocket_url);
    await client.opened;
    client.send({ type: 'start', access_token });
    await client.waitFor((e) => e.type === 'call_started');
    const greeting = await client.waitFor((e) => e.type === 'transcript' && e.role === 'agent' && e.final === true);
    expect(String(greeting.text)).toMatch(/thanks for calling/i);
    await client.silence(300);
    await client.speak(phrase16k('01-my-name-is-john'));
    await client.silence(300);
    await client.waitFor((e) => e.type === 'transcript' && e.role === 'user' && e.final === true);
    await client.waitFor((e) => e.type === 'latency');
    const before = client.events.length;
    await client.waitFor((e) => e.type === 'agent_stopped' && client.events.indexOf(e) > before);
    // A key from the page's keypad is the caller's next turn (the demo agent takes one key).
    client.send({ type: 'dtmf', digit: '2' });
    await client.waitFor((e) => e.type === 'transcript' && e.role === 'user' && e.text === '2');
    client.send({ type: 'hangup' });
    expect(await client.closed).toBe(1000);
    const r = await record(call_id);
    expect(r).toMatchObject({
      call_type: 'web',
      call_status: 'ended',
      disconnection_reason: 'user_hangup',
      metadata: { page: 'test' },
    });
    expect(r.transcript!.map((m) => m.role)).toEqual(['agent', 'user', 'agent', 'user']);
    expect(r.transcript![3]).toMatchObject({ content: '2', input: 'keypad' });
    // The page hears the reason before the socket closes, even when it hung up itself.
    expect(client.events.some((e) => e.type === 'call_ended' && e.disconnection_reason === 'user_hangup')).toBe(true);
    expect(client.audioFrames).toBeGreaterThan(100);
  }, 60_000);

  it('speaks Opus both ways when the start asks for it: the caller is understood, the agent is heard, a bad packet is dropped, and the recording downloads as Ogg Opus', async () => {
    const { call_id, access_token, websocket_url, codecs } = await webCall();
    expect(codecs).toEqual(['pcm', 'opus']);
    const client = new WebCallClient(websocket_url, { codec: 'opus' });
    await client.opened;
    client.send({ type: 'start', access_token, codec: 'opus' });
    expect(await client.waitFor((e) => e.type === 'call_started')).toMatchObject({ codec: 'opus', sample_rate: 16000 });
    await client.waitFor((e) => e.type === 'transcript' && e.role === 'agent' && e.final === true);
    const greetingMs = client.heard.reduce((n, s) => n + s.length, 0) / 16;
    expect(greetingMs).toBeGreaterThan(1000);
    const heard = Int16Array.from(client.heard.flatMap((s) => Array.from(s)));
    expect(rms(heard)).toBeGreaterThan(300); // a voice, not silence
    await client.silence(300);
    client.sendBinary(Buffer.alloc(0)); // undecodable: dropped, the call goes on
    const spokenFrom = client.bytesSent;
    const phrase = phrase16k('01-my-name-is-john');
    await client.speak(phrase);
    const upBytesPerSecond = (client.bytesSent - spokenFrom) / (phrase.length / 16000);
    await client.silence(300);
    const user = await client.waitFor((e) => e.type === 'transcript' && e.role === 'user' && e.final === true);
    expect(String(user.text)).toMatch(/john/i);
    await client.waitFor((e) => e.type === 'latency'); // the reply has started: enough to hear
    const downBytesPerSecond = client.bytesReceived / (client.heard.reduce((n, s) => n + s.length, 0) / 16000);
    // 24 kbit/s is 3,000 bytes a second; PCM would be 32,000.
    expect(upBytesPerSecond).toBeLessThan(4000);
    expect(downBytesPerSecond).toBeLessThan(4000);
    process.stdout.write(
      `\n[web opus] bytes per second of audio: caller → server ${Math.round(upBytesPerSecond)}, server → caller ${Math.round(downBytesPerSecond)} (PCM: 32000 each way)\n`,
    );
    client.send({ type: 'hangup' });
    expect(await client.closed).toBe(1000);
    const r = await record(call_id, (rec) => rec.call_status === 'ended' && rec.recording_url !== null);
    expect(r.transcript!.map((m) => m.role).slice(0, 2)).toEqual(['agent', 'user']);

    const auth = { authorization: `Bearer ${t.keyOf('acme')}` };
    const wav = decodeWav(
      new Uint8Array(await (await fetch(r.recording_url!, { headers: auth })).arrayBuffer()),
      16000,
      0,
    ).samples;
    const ogg = await fetch(`${r.recording_url!}?format=ogg`, { headers: auth });
    expect(ogg.status).toBe(200);
    expect(ogg.headers.get('content-type')).toBe('audio/ogg; codecs=opus');
    const file = Buffer.from(await ogg.arrayBuffer());
    const decoded = await decodeOggOpus(file);
    // The Ogg holds the WAV's audio: its length to the 20 ms, and the caller's voice where the WAV has it.
    expect(Math.abs(decoded.left.length - wav.length)).toBeLessThanOrEqual(320);
    expect(envelopeCorrelation(wav, decoded.left)).toBeGreaterThan(0.9);
    process.stdout.write(
      `[web opus] recording: WAV ${wav.length * 4 + 44} bytes, Ogg Opus ${file.length} bytes (1 : ${((wav.length * 4 + 44) / file.length).toFixed(1)})\n`,
    );
    const bad = await t.request('GET', `/v2/calls/${call_id}/recording?format=mp3`);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'BAD_REQUEST' });
  }, 60_000);

  it('answers a transfer the model asks for with "transfers need a phone line", and the call goes on', async () => {
    const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown> & { tools: unknown[] };
    const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
    const tools = [...demo.tools, { type: 'transfer_call', transfer_to: '+14155550199' }];
    expect(
      (await t.request('POST', '/v2/agents', { body: { ...config, agent_id: 'desk-transfer', tools } })).status,
    ).toBe(201);
    const res = await t.request('POST', '/v2/web-calls', { body: { agent_id: 'desk-transfer' } });
    const { call_id, access_token, websocket_url } = CreateWebCallResponse.parse(res.body);
    const client = new WebCallClient(websocket_url);
    await client.opened;
    client.send({ type: 'start', access_token });
    await client.waitFor((e) => e.type === 'transcript' && e.role === 'agent' && e.final === true);
    await client.silence(300);
    await client.speak(phrase16k('06-can-you-transfer-me'));
    await client.silence(300);
    const result = await client.waitFor((e) => e.type === 'tool_result' && e.name === 'transfer_call');
    expect(result).toMatchObject({ successful: false, content: WEB_TRANSFER_REFUSAL });
    await client.waitFor((e) => e.type === 'transcript' && e.role === 'agent' && e.text === DEMO_NO_TRANSFER);
    client.send({ type: 'hangup' });
    expect(await client.closed).toBe(1000);
    const r = await record(call_id);
    expect(r.disconnection_reason).toBe('user_hangup');
    expect(r.transcript_with_tool_calls!.find((m) => m.role === 'tool_call_result')).toMatchObject({
      successful: false,
      content: WEB_TRANSFER_REFUSAL,
    });
  }, 60_000);

  it('holds caller audio to the clock: a page that pushes a minute of audio in a moment is cut off (1008) and none of it is kept', async () => {
    const { call_id, access_token, websocket_url } = await webCall();
    const client = new WebCallClient(websocket_url);
    await client.opened;
    client.send({ type: 'start', access_token });
    await client.waitFor((e) => e.type === 'call_started');
    const started = performance.now();
    client.flood(new Int16Array(60 * 16000).fill(3000));
    expect(await client.closed).toBe(1008);
    const r = await record(call_id);
    const heldMs = performance.now() - started;
    expect(client.events.some((e) => e.type === 'error' && e.code === 'AUDIO_AHEAD')).toBe(true);
    // The recording holds the call's own length, not the minute that was pushed.
    const wav = await fetch(r.recording_url!, { headers: { authorization: `Bearer ${t.keyOf('acme')}` } });
    const seconds = decodeWav(new Uint8Array(await wav.arrayBuffer()), 16000).samples.length / 16000;
    expect(seconds).toBeLessThan(heldMs / 1000 + 3);
  }, 60_000);

  it('refuses a wrong token with 1008 and a reused one too', async () => {
    const { access_token, websocket_url } = await webCall();
    const wrong = new WebCallClient(websocket_url);
    await wrong.opened;
    wrong.send({ type: 'start', access_token: 'wct_nope' });
    expect(await wrong.closed).toBe(1008);

    const first = new WebCallClient(websocket_url);
    await first.opened;
    first.send({ type: 'start', access_token });
    await first.waitFor((e) => e.type === 'call_started');
    const reuse = new WebCallClient(websocket_url);
    await reuse.opened;
    reuse.send({ type: 'start', access_token });
    expect(await reuse.closed).toBe(1008);
    first.close();
  }, 30_000);

  it('tells the page how the call ended when the service ends it', async () => {
    const res = await t.request('POST', '/v2/agents', {
      body: {
        agent_id: 'web-short',
        agent_name: 'short',
        begin_message: 'Hi.',
        inactivity_timeout_ms: 1000,
        llm: { base_url: `${t.service.publicUrl}/demo/llm/v1`, model: 'demo' },
      },
    });
    expect(res.status).toBe(201);
    const call = CreateWebCallResponse.parse(
      (await t.request('POST', '/v2/web-calls', { body: { agent_id: 'web-short' } })).body,
    );
    const client = new WebCallClient(call.websocket_url);
    await client.opened;
    client.send({ type: 'start', access_token: call.access_token });
    const silence = client.silence(6000);
    const ended = await client.waitFor((e) => e.type === 'call_ended', 20_000);
    expect(ended.disconnection_reason).toBe('inactivity');
    await silence;
  }, 30_000);
});
