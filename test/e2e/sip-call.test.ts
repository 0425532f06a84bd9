// A SIP trunk end to end on the real service: SIP_LISTEN on loopback, a trunk created over the API allowing
// 127.0.0.1, and Debian's baresip calling in over G.722 with real audio (a recorded phrase as its microphone).
// The agent greets, the caller's phrase reaches the call (its recording) and its words the transcript, and baresip
// hangs up when its audio ends (a BYE): the call record is `inbound` with the caller's number, the greeting, the
// caller's words, and user_hangup. A call to a number the trunk does not hold is refused 403 (SIPp) and leaves no
// record. docs/sip-notes.md says how baresip is set up. baresip's sndfile module dumps what it heard, which the
// recogniser reads back: the phone heard the greeting. The org's webhook receiver gets call_started, call_ended and
// call_analyzed for the SIP call, and /metrics counts it. The recorded call, replayed as an agent test against its
// agent version, says the same turn by turn.
//
// Outbound, through the trunk's outbound side (SIPp as the callee on the far side of the trunk): an answered call
// whose callee speaks and hangs up ends user_hangup with the greeting and the callee's words; a busy callee (486)
// ends dial_failed saying busy with the SIP status; a callee that only rings is CANCELled at RING_TIMEOUT_MS (short
// here) and ends dial_no_answer. An answering machine (SIPp playing a greeting and a beep) is found and the voicemail
// message left after the beep (voicemail_reached). baresip, auto-answering, is called too: it hears the greeting and a
// line said over the live-call API (POST /v2/calls/{id}/say), which the transcript holds. A trunk number whose
// trunk has no outbound side is refused 400 with no record.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SttConfigSchema } from '../../src/agents/schema.ts';
import { AgentTestSchema, TestRunSchema } from '../../src/agent-tests/schema.ts';
import { decodeWav, encodeWav } from '../../src/audio/wav.ts';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import { createSttEngine } from '../../src/speech/stt/index.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { freeUdpPort } from '../helpers/net.ts';
import { writeBaresipHome } from '../helpers/baresip.ts';
import { webhookReceiver } from '../helpers/webhook-receiver.ts';
import { startSipp, writeMachineWav, writeSippWav, type SippRun } from '../carriers/sip/sipp-run.ts';
import { testDispatcher } from '../support/outbound.ts';

const HOST = '127.0.0.1';
const TRUNK_NUMBER = '+15550700001';
const CALLER = '+15557000099';
const OUTBOUND_NUMBER = '+15550700002';
const INBOUND_ONLY_NUMBER = '+15550700003';
const CALLEE = '+15557000088';
const RING_TIMEOUT_MS = 1500;
const VOICEMAIL_MESSAGE = 'This is the clinic. Please call us back.';
const LIVE_LINE = 'Please hold the line.';
const METRICS_TOKEN = 'sip-metrics-token-0123456789abcdef';
const fixtures = join(import.meta.dirname, '..', '..', 'media', 'fixtures');

let t: TestService;
/** The inbound baresip call, once over: replayed as an agent test. */
let inboundCall: CallRecord | undefined;
let recogniser: ReturnType<typeof createSttEngine>;
let sipPort: number;
const dir = mkdtempSync(join(tmpdir(), 'sip-e2e-'));
const cleanupsAfter: (() => unknown)[] = [];
afterAll(() => {
  for (const cleanup of cleanupsAfter) cleanup();
});

beforeAll(async () => {
  sipPort = await freeUdpPort();
  t = await startTestService({
    SIP_LISTEN: `udp:${HOST}:${sipPort}`,
    RTP_PORTS: '47900-47999',
    RING_TIMEOUT_MS: String(RING_TIMEOUT_MS),
    METRICS_TOKEN,
  });
  const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown>;
  const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
  const agent = await t.request('POST', '/v2/agents', {
    body: {
      ...config,
      agent_id: 'sip-desk',
      begin_message: 'Hello, thanks for calling.',
      inbound_numbers: [TRUNK_NUMBER],
    },
  });
  expect(agent.status, agent.text).toBe(201);
  const machineAgent = await t.request('POST', '/v2/agents', {
    body: {
      ...config,
      agent_id: 'sip-vm',
      begin_message: 'Hello, thanks for calling.',
      voicemail: { detect: true, action: 'leave_message', message: VOICEMAIL_MESSAGE },
    },
  });
  expect(machineAgent.status, machineAgent.text).toBe(201);
  const trunk = await t.request('POST', '/v2/sip-trunks', {
    body: { name: 'loopback pbx', numbers: [TRUNK_NUMBER], inbound: { allowed_addresses: [`${HOST}/32`] } },
  });
  expect(trunk.status, trunk.text).toBe(201);
  // baresip talks on its WAV's clock and hangs up when it ends, whatever the call is doing: the recogniser's first
  // load (the process's one shared engine, 6-18 s on this machine) is done before it dials, so the phrase is read
  // before the BYE however busy the machine is.
  recogniser = createSttEngine(SttConfigSchema.parse(config['stt'] ?? {}), { dispatcher: testDispatcher });
  await (await recogniser.open({ sampleRate: 8000, language: 'en-US' })).close();
}, 60_000);
afterAll(async () => {
  await t?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * The caller's microphone: silence while the session starts and greets, the phrase, then silence while its words are
 * read and the agent answers; 16 kHz mono 16-bit (baresip's G.722 takes 16 kHz; the phrase is the wideband recording,
 * as a wideband phone's microphone hears it: an 8 kHz one doubled put images of its voice above 4 kHz that the
 * recogniser, on some machines, heard "John" in as "Grant").
 */
function callerWav(path: string): void {
  const phrase = decodeWav(readFileSync(join(fixtures, '01-my-name-is-john-rms.16k.wav')), 16000).samples;
  const before = 6 * 16000;
  const samples = new Int16Array(before + phrase.length + 5 * 16000);
  samples.set(phrase, before);
  writeFileSync(path, encodeWav({ samples, sampleRate: 16000 }));
}

/**
 * baresip as `user`: it calls `dial` (or, without it, answers the first call to it at once), plays the WAV, and hangs
 * up (BYE) when the WAV ends; it quits by 25 s.
 */
async function baresipPhone(user: string, dial?: string) {
  const home = join(dir, 'baresip');
  mkdirSync(home, { recursive: true });
  const wav = join(dir, 'caller.wav');
  callerWav(wav);
  const port = await freeUdpPort();
  const dumps = mkdtempSync(join(dir, 'heard-'));
  writeBaresipHome({
    home,
    host: HOST,
    port,
    microphone: wav,
    sampleRate: 16000,
    rtpPorts: '47800-47899',
    codecs: ['G722', 'PCMU'],
    user,
    autoAnswer: true,
    dumps,
  });
  const child = spawn('baresip', ['-f', home, ...(dial ? ['-e', `/dial ${dial}`] : []), '-t', '25'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const run = { output: '', exited: once(child, 'exit'), stop: () => child.kill(), dumps, port };
  child.stdout.on('data', (chunk: Buffer) => (run.output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (run.output += chunk.toString()));
  return run;
}

/** What baresip heard on its call: the decoded direction of sndfile's dump, read by the recogniser. */
async function heardByBaresip(dumps: string): Promise<{ text: string; sampleRate: number; files: string[] }> {
  const files = readdirSync(dumps);
  const heard = files.find((f) => f.endsWith('-dec.wav'));
  if (heard === undefined) return { text: '', sampleRate: 0, files };
  const bytes = readFileSync(join(dumps, heard));
  const sampleRate = bytes.readUInt32LE(24);
  const { samples } = decodeWav(bytes, sampleRate);
  const stream = await recogniser.open({ sampleRate, language: 'en-US' });
  const frame = sampleRate / 50;
  for (let at = 0; at + frame <= samples.length; at += frame) stream.push(samples.subarray(at, at + frame));
  const { text } = await stream.finalize();
  await stream.close();
  return { text, sampleRate, files };
}

async function sippRefused(number: string): Promise<{ code: number | null; output: string }> {
  const refused = join(import.meta.dirname, '..', 'carriers', 'sip', 'sipp', 'refused.xml');
  return (await startSipp(['-sf', refused, '-s', number, `${HOST}:${sipPort}`], { dir, timeoutS: 10 })).done();
}

async function listCalls(): Promise<CallRecord[]> {
  const res = await t.request('POST', '/v2/calls/list', { body: {} });
  return (res.body as { calls: unknown[] }).calls.map((c) => CallRecordSchema.parse(c));
}

async function ended(callId: string): Promise<CallRecord> {
  for (let i = 0; i < 300; i++) {
    const record = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);
    if (record.call_status === 'ended') return record;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the SIP call never ended');
}

describe('a call over a SIP trunk', () => {
  it('is answered by the agent of the trunk’s number over G.722 (16 kHz) when the phone offers it: recorded inbound with the caller’s number, the greeting said and heard by the phone, the caller’s audio recorded and its words in the transcript, user_hangup on the caller’s BYE, the org’s webhooks told and the call counted in /metrics', async () => {
    const receiver = await webhookReceiver();
    cleanupsAfter.push(() => receiver.close());
    const hooks = receiver.hooks;
    const settings = await t.request('PUT', '/v2/webhook-settings', {
      body: { webhook_url: receiver.url },
    });
    expect(settings.status, settings.text).toBe(200);
    // The Request-URI's user part without its +: trunks send both forms.
    const caller = await baresipPhone(CALLER, `sip:${TRUNK_NUMBER.slice(1)}@${HOST}:${sipPort}`);
    let calls: CallRecord[] = [];
    for (let i = 0; i < 100 && calls.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      calls = await listCalls();
    }
    expect(calls, caller.output.slice(-2000)).toHaveLength(1);
    const record = await ended(calls[0]!.call_id);
    inboundCall = record;
    caller.stop();
    await caller.exited;
    expect(record).toMatchObject({
      call_type: 'inbound',
      call_from: CALLER,
      call_to: TRUNK_NUMBER,
      agent_id: 'sip-desk',
      disconnection_reason: 'user_hangup',
    });
    const transcript = record.transcript ?? [];
    expect(transcript[0]).toMatchObject({ role: 'agent' });
    expect(transcript[0]!.content).toMatch(/thanks for calling/i);
    // The caller's words reached the recogniser and made a turn.
    expect(
      transcript.some((m) => m.role === 'user' && /john/i.test(m.content)),
      JSON.stringify(transcript),
    ).toBe(true);
    // The caller's phrase reached the call: the recording's caller channel (left) carries it.
    const wav = await fetch(`${t.url}/v2/calls/${record.call_id}/recording`, {
      headers: { authorization: `Bearer ${t.keyOf('acme')}` },
    });
    expect(wav.status).toBe(200);
    const bytes = Buffer.from(await wav.arrayBuffer());
    // The call ran at G.722's 16 kHz: the recording is at the line's rate.
    expect(bytes.readUInt32LE(24)).toBe(16000);
    let callerPeak = 0;
    for (let at = 44; at + 4 <= bytes.length; at += 4)
      callerPeak = Math.max(callerPeak, Math.abs(bytes.readInt16LE(at)));
    expect(callerPeak).toBeGreaterThan(5000);
    // baresip heard the agent: the greeting is in the audio it decoded.
    const heard = await heardByBaresip(caller.dumps);
    // Measured: sndfile writes the decoder's output at 8 kHz (its header says so and the words read right at it).
    expect(heard.sampleRate, heard.files.join(', ')).toBe(8000);
    // "for calling" only comes from the greeting. Its first words can be read wrong: a fresh clone's suite, three e2e
    // files at once, heard "Hello, thanks for calling." as "Swillo, Hank for calling" in what baresip played out.
    expect(heard.text).toMatch(/for calling/i);
    // The org's webhook heard the SIP call start and end (and its analysis, which comes after the end).
    await vi.waitFor(
      () => {
        const events = hooks.filter((h) => h.callId === record.call_id).map((h) => h.event);
        expect(events).toEqual(expect.arrayContaining(['call_started', 'call_ended', 'call_analyzed']));
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(hooks.filter((h) => h.callId === record.call_id && h.event === 'call_started')).toHaveLength(1);
    // /metrics counts the ended SIP call by its reason.
    const metrics = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(metrics.status).toBe(200);
    const counted = /^voicecall_calls_total\{disconnection_reason="user_hangup"\} (\d+)$/m.exec(await metrics.text());
    expect(Number(counted?.[1])).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('is an agent test: the recorded SIP call replayed against its agent version says the same, turn by turn', async () => {
    const original = inboundCall!;
    const created = await t.request('POST', '/v2/agents/sip-desk/tests', {
      body: {
        name: 'replay of a SIP call',
        caller: { replay: { call_id: original.call_id } },
        expect: { transcript_contains: [{ regex: 'john', role: 'user' }] },
      },
    });
    expect(created.status, created.text).toBe(201);
    const started = await t.request('POST', '/v2/agents/sip-desk/test-runs', {
      body: { agent_version: original.agent_version, test_ids: [AgentTestSchema.parse(created.body).test_id] },
    });
    expect(started.status, started.text).toBe(201);
    let run = TestRunSchema.parse(started.body);
    for (let i = 0; i < 600 && run.status === 'running'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      run = TestRunSchema.parse((await t.request('GET', `/v2/test-runs/${run.run_id}`)).body);
    }
    const result = run.results[0]!;
    expect(result.assertions.filter((a) => !a.passed)).toEqual([]);
    // Turn by turn as far as the original went: baresip hangs up on its WAV's clock, which may cut the original's
    // last answer short or before it was said, while the replay hears it out. Every turn before the last is the same;
    // the last one the original has is the same or the start of the replay's.
    const turns = result.original!.turns.filter((turn) => turn.original !== null);
    expect(turns.slice(0, -1).filter((turn) => !turn.same)).toEqual([]);
    const last = turns.at(-1)!;
    expect(last.same || (last.replay ?? '').startsWith(last.original!), JSON.stringify(last)).toBe(true);
  }, 90_000);

  it('refuses a number the trunk does not hold with 403, leaving no record', async () => {
    const before = (await listCalls()).length;
    const run = await sippRefused('15550709999');
    expect(run.code, run.output).toBe(0);
    expect((await listCalls()).length).toBe(before);
  }, 30_000);
});

/** SIPp as the callee behind a trunk: it listens on a port of its own and runs `scenario` for one call. */
async function sippCallee(scenario: string): Promise<SippRun> {
  const callee = await startSipp(['-sf', join(import.meta.dirname, '..', 'carriers', 'sip', 'sipp', scenario)], {
    dir,
  });
  cleanupsAfter.push(() => callee.stop());
  // SIPp binds its port before it reads the scenario's first message; a moment lets it.
  await new Promise((r) => setTimeout(r, 300));
  return callee;
}

/** Points the outbound trunk at `port` and places a call from its number; returns the call id. */
async function dialThroughTrunk(trunkId: string, port: number, agentId = 'sip-desk'): Promise<string> {
  const patched = await t.request('PATCH', `/v2/sip-trunks/${trunkId}`, {
    body: { outbound: { address: `${HOST}:${port}`, transport: 'udp' } },
  });
  expect(patched.status, patched.text).toBe(200);
  const placed = await t.request('POST', '/v2/calls', {
    body: { call_from: OUTBOUND_NUMBER, call_to: CALLEE, agent_id: agentId },
  });
  expect(placed.status, placed.text).toBe(201);
  return (placed.body as { call_id: string }).call_id;
}

async function finished(callId: string): Promise<CallRecord> {
  for (let i = 0; i < 300; i++) {
    const record = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);
    if (record.end_timestamp !== null) return record;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the SIP call never ended');
}

describe('a call placed through a SIP trunk', () => {
  let trunkId: string;
  beforeAll(async () => {
    const trunk = await t.request('POST', '/v2/sip-trunks', {
      body: {
        name: 'loopback carrier',
        numbers: [OUTBOUND_NUMBER],
        inbound: { allowed_addresses: [`${HOST}/32`] },
        outbound: { address: `${HOST}:5060`, transport: 'udp' },
      },
    });
    expect(trunk.status, trunk.text).toBe(201);
    trunkId = (trunk.body as { sip_trunk_id: string }).sip_trunk_id;
    writeSippWav(join(dir, 'callee.wav'));
    writeMachineWav(join(dir, 'machine.wav'));
  });

  it('is answered by the callee: outbound, the agent greets, the callee’s audio is recorded and its words reach the transcript, and the callee’s BYE ends it user_hangup', async () => {
    const callee = await sippCallee('answer.xml');
    const callId = await dialThroughTrunk(trunkId, callee.port);
    const record = await finished(callId);
    const run = await callee.done();
    expect(run.code, run.output).toBe(0);
    expect(record).toMatchObject({
      call_type: 'outbound',
      call_status: 'ended',
      call_from: OUTBOUND_NUMBER,
      call_to: CALLEE,
      disconnection_reason: 'user_hangup',
      metadata: { sip_call_id: expect.stringMatching(/@127\.0\.0\.1$/), sip_trunk_id: trunkId },
    });
    const transcript = record.transcript ?? [];
    expect(transcript[0]).toMatchObject({ role: 'agent' });
    expect(transcript[0]!.content).toMatch(/thanks for calling/i);
    const wav = await fetch(`${t.url}/v2/calls/${record.call_id}/recording`, {
      headers: { authorization: `Bearer ${t.keyOf('acme')}` },
    });
    expect(wav.status).toBe(200);
    // The callee's RTP reached the call: the recording's far-side channel (left) carries its phrase.
    const bytes = Buffer.from(await wav.arrayBuffer());
    let calleePeak = 0;
    for (let at = 44; at + 4 <= bytes.length; at += 4)
      calleePeak = Math.max(calleePeak, Math.abs(bytes.readInt16LE(at)));
    expect(calleePeak).toBeGreaterThan(5000);
    expect(
      transcript.some((m) => m.role === 'user' && /john/i.test(m.content)),
      JSON.stringify(transcript),
    ).toBe(true);
  }, 30_000);

  it('knows an answering machine on the far side from its greeting and beep, leaves the voicemail message after the beep, and ends voicemail_reached with the message the last thing said', async () => {
    const callee = await sippCallee('voicemail.xml');
    const record = await finished(await dialThroughTrunk(trunkId, callee.port, 'sip-vm'));
    // SIPp's scenario passes only if the service hung up with a BYE.
    const run = await callee.done();
    expect(run.code, run.output).toBe(0);
    expect(record).toMatchObject({
      call_type: 'outbound',
      call_status: 'ended',
      disconnection_reason: 'voicemail_reached',
    });
    expect(record.disconnection_message).toMatch(/answering machine answered.*the voicemail message was left/);
    const message = record.transcript!.at(-1)!;
    expect(message).toMatchObject({ role: 'agent', content: VOICEMAIL_MESSAGE });
    // The machine's beep ends 0.3 + 6.4 (greeting) + 0.4 + 0.5 s after the answer; the message starts after it.
    expect(message.start_at).toBeGreaterThanOrEqual(7.6 - 0.1);
    expect(message.start_at).toBeLessThanOrEqual(7.6 + 3);
  }, 30_000);

  it('is answered by a phone (baresip, auto-answer): outbound, the phone hears the greeting and a line said over the live-call API, which the transcript holds as the agent’s, and the callee’s words and BYE end it user_hangup', async () => {
    const phone = await baresipPhone(CALLEE);
    cleanupsAfter.push(() => phone.stop());
    const callId = await dialThroughTrunk(trunkId, phone.port);
    // Once the greeting is under way, a line from outside the call.
    await vi.waitFor(
      async () => {
        const live = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);
        expect(live.transcript?.some((m) => m.role === 'agent')).toBe(true);
      },
      { timeout: 10_000, interval: 100 },
    );
    const said = await t.request('POST', `/v2/calls/${callId}/say`, { body: { text: LIVE_LINE } });
    expect(said.status, said.text).toBe(202);
    const record = await finished(callId);
    phone.stop();
    await phone.exited;
    expect(record, phone.output.slice(-2000)).toMatchObject({
      call_type: 'outbound',
      call_to: CALLEE,
      disconnection_reason: 'user_hangup',
    });
    const transcript = record.transcript ?? [];
    expect(transcript[0]!.content).toMatch(/thanks for calling/i);
    expect(transcript.some((m) => m.role === 'agent' && m.content === LIVE_LINE)).toBe(true);
    expect(
      transcript.some((m) => m.role === 'user' && /john/i.test(m.content)),
      JSON.stringify(transcript),
    ).toBe(true);
    const heard = await heardByBaresip(phone.dumps);
    expect(heard.text).toMatch(/for calling/i); // as above: the greeting's first words may be read wrong
    expect(heard.text).toMatch(/hold the line/i);
  }, 40_000);

  it('ends a call the callee answers 486 Busy Here as dial_failed, saying busy and the SIP status', async () => {
    const callee = await sippCallee('busy.xml');
    const record = await finished(await dialThroughTrunk(trunkId, callee.port));
    const run = await callee.done();
    expect(run.code, run.output).toBe(0);
    expect(record).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'dial_failed' });
    expect(record.disconnection_message).toMatch(/busy.*SIP 486/i);
  }, 20_000);

  it('CANCELs a callee that only rings once RING_TIMEOUT_MS passes, and ends the call dial_no_answer', async () => {
    const callee = await sippCallee('ring.xml');
    const started = Date.now();
    const record = await finished(await dialThroughTrunk(trunkId, callee.port));
    expect(Date.now() - started).toBeGreaterThanOrEqual(RING_TIMEOUT_MS);
    // SIPp's scenario passes only if the CANCEL came (and the 487 was ACKed).
    const run = await callee.done();
    expect(run.code, run.output).toBe(0);
    expect(record).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'dial_no_answer' });
  }, 20_000);

  it('refuses a call from a trunk number whose trunk has no outbound side with 400, leaving no record', async () => {
    const trunk = await t.request('POST', '/v2/sip-trunks', {
      body: { name: 'inbound only', numbers: [INBOUND_ONLY_NUMBER], inbound: { allowed_addresses: [`${HOST}/32`] } },
    });
    expect(trunk.status, trunk.text).toBe(201);
    const before = (await listCalls()).length;
    const placed = await t.request('POST', '/v2/calls', {
      body: { call_from: INBOUND_ONLY_NUMBER, call_to: CALLEE, agent_id: 'sip-desk' },
    });
    expect(placed.status, placed.text).toBe(400);
    expect(placed.body).toMatchObject({ code: 'BAD_REQUEST', details: expect.stringMatching(/no outbound side/) });
    expect((await listCalls()).length).toBe(before);
  });
});
