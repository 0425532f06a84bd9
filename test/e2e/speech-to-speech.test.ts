// A phone call whose agent's model is a speech-to-speech one (llm.engine "openai-realtime"), end to
// end: Twilio's webhook and media stream into the real service, which opens the model's socket under
// its egress policy to a stand-in speaking the OpenAI Realtime protocol (it hears the committed audio
// with pocketsphinx and answers with flite). The greeting, a caller's words answered in the model's
// voice, a function call run as the agent's HTTP tool, and a barge-in that truncates the model's audio
// item to what was played and keeps only the words heard in the transcript. The same call side
// through Gemini Live (llm.engine "gemini-live", its stand-in hearing each activity with pocketsphinx
// and answering as 24 kHz PCM): the greeting, a barge-in whose words heard are told to the model as a
// note (the protocol has no truncate), and the words that cut in answered through a function call that
// is one of the agent's MCP server's tools (a real MCP server from the official SDK). Then both engines
// with the model's own turn detection (llm.turn_detection "model"), one short call each, side by side: the
// stand-ins end the caller's turns themselves and answer, the model's speech start over its answer is a
// barge-in that truncates (OpenAI) or is told as a note (Gemini), and the transcript keeps both sides with times.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wer } from '../../bench/wer.ts';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import { z } from 'zod';
import { startMcpServer, type TestMcpServer } from '../helpers/mcp-server.ts';
import { startServer, type TestServer } from '../support/http-server.ts';
import { agentFinished, fixtureUlaw, placeInboundCall } from '../helpers/phone.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { GeminiLiveStandIn } from '../llm/realtime/gemini-stand-in.ts';
import { OpenAiRealtimeStandIn, type StandInScript } from '../llm/realtime/openai-stand-in.ts';

const NUMBER = '+15550100041';
const GEMINI_NUMBER = '+15550100042';
const MODEL_TURNS_NUMBER = '+15550100043';
const GEMINI_MODEL_TURNS_NUMBER = '+15550100044';
const LONG_ANSWER =
  'the office is open on saturday from nine in the morning until five in the evening and on sunday from ten until four and on public holidays it stays closed all day long';

const script: StandInScript = (heard, output) => {
  if (output !== null) return { say: 'your order is cancelled' };
  if (/cancel/.test(heard)) return { call: { name: 'cancel_order', arguments: '{"reason":"caller asked"}' } };
  if (/office/.test(heard)) return { say: LONG_ANSWER };
  return { say: `you said ${heard}` };
};

let t: TestService;
let standIn: OpenAiRealtimeStandIn;
let gemini: GeminiLiveStandIn;
let orders: TestServer;
let mcp: TestMcpServer;

beforeAll(async () => {
  [t, standIn, gemini, orders, mcp] = await Promise.all([
    // Debug logs: the barge-in over the long answer once made no turn in a full suite run (November 29), and its
    // decisions are logged at debug.
    startTestService({}, { logLevel: 'debug' }),
    OpenAiRealtimeStandIn.start({ script }),
    GeminiLiveStandIn.start({ script }),
    startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"cancelled":true}');
    }),
    startMcpServer((server) => {
      server.registerTool(
        'cancel_order',
        { description: 'Cancels the caller’s order.', inputSchema: { reason: z.string() } },
        ({ reason }) => ({ content: [{ type: 'text', text: `Order cancelled (${reason}).` }] }),
      );
    }),
  ]);
  const created = await t.request('POST', '/v2/agents', {
    body: {
      agent_id: 'realtime-desk',
      agent_name: 'Realtime desk',
      inbound_numbers: [NUMBER],
      begin_message: 'Hello.',
      // The cheapest recogniser: it only ends the caller's turns and writes their side of the transcript.
      stt: { engine: 'pocketsphinx', language: 'en-US' },
      // The "goodbye" that cuts in is 0.6 s of speech. At the default threshold (600 ms) it stopped the answer only
      // when it began within 2 s of the agent taking the turn (200 ms then); when the answer came late it began after,
      // was heard as 584 ms, and was let go ("speech over the agent let go"): no turn came. 280 ms here.
      interruption_sensitivity: 0.9,
      system_prompt: 'You answer the phone for a shop.',
      llm: { engine: 'openai-realtime', base_url: standIn.url, model: 'gpt-realtime', api_key: 'sk-test' },
      tools: [
        {
          type: 'api',
          name: 'cancel_order',
          description: 'Cancels the caller’s order.',
          url: `${orders.url}/cancel`,
          parameters: { type: 'object', properties: { reason: { type: 'string' } } },
        },
      ],
    },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const geminiAgent = await t.request('POST', '/v2/agents', {
    body: {
      agent_id: 'gemini-desk',
      agent_name: 'Gemini desk',
      inbound_numbers: [GEMINI_NUMBER],
      begin_message: 'Hello.',
      stt: { engine: 'pocketsphinx', language: 'en-US' },
      system_prompt: 'You answer the phone for a shop.',
      llm: {
        engine: 'gemini-live',
        base_url: gemini.url,
        model: 'gemini-live-2.5-flash-preview',
        voice: 'Kore',
        api_key: 'gm-test',
      },
      tools: [{ type: 'mcp', url: mcp.url }],
    },
  });
  expect(geminiAgent.status, JSON.stringify(geminiAgent.body)).toBe(201);
  for (const [agent_id, number, llm] of [
    [
      'realtime-own-turns',
      MODEL_TURNS_NUMBER,
      { engine: 'openai-realtime', base_url: standIn.url, model: 'gpt-realtime', turn_detection: 'model' },
    ],
    [
      'gemini-own-turns',
      GEMINI_MODEL_TURNS_NUMBER,
      { engine: 'gemini-live', base_url: gemini.url, model: 'gemini-live-2.5-flash-preview', turn_detection: 'model' },
    ],
  ] as const) {
    const own = await t.request('POST', '/v2/agents', {
      body: {
        agent_id,
        agent_name: agent_id,
        inbound_numbers: [number],
        stt: { engine: 'pocketsphinx', language: 'en-US' },
        system_prompt: 'You answer the phone for a shop.',
        llm,
      },
    });
    expect(own.status, JSON.stringify(own.body)).toBe(201);
  }
}, 30_000);
afterAll(async () => {
  await t?.stop();
  await standIn?.close();
  await gemini?.close();
  await mcp?.close();
  await orders?.close();
});

async function finalRecord(callId: string): Promise<CallRecord> {
  for (let i = 0; i < 200; i++) {
    const record = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);
    if (record.call_status === 'ended') return record;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the call never ended');
}

/** The record's transcript has the agent's answer to the caller's `turns`-th turn. */
async function answered(callId: string, turns: number): Promise<boolean> {
  const record = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);
  const roles = (record.transcript ?? []).map((m) => m.role);
  const nth = roles.reduce<number[]>((at, role, i) => (role === 'user' ? [...at, i] : at), [])[turns - 1];
  return nth !== undefined && roles.slice(nth + 1).includes('agent');
}

describe('a call through a speech-to-speech model', () => {
  it('greets, answers in the model’s voice, runs its function call as the HTTP tool, and a barge-in truncates the model’s audio to what was played', async () => {
    const { caller, callId } = await placeInboundCall(t.url, NUMBER);
    await agentFinished(caller, { after: 0, timeoutMs: 45_000 }); // greeting, in the agent's own voice

    let before = caller.played.length;
    await caller.speak(fixtureUlaw('09-i-want-to-cancel'));
    await agentFinished(caller, { after: before, timeoutMs: 45_000 });
    expect(orders.requests).toHaveLength(1);
    expect(JSON.parse(orders.requests[0]!.body)).toEqual({ reason: 'caller asked' });

    before = caller.played.length;
    await caller.speak(fixtureUlaw('13-is-the-office-open'));
    // About a second and a half of the long answer plays, then the caller cuts in.
    for (let i = 0; i < 900 && caller.played.length < before + 75; i++) await caller.pause(50);
    await caller.speak(fixtureUlaw('08-goodbye'));
    // The model's answer to the words that cut it in is heard in full.
    for (let i = 0; i < 900 && !(await answered(callId, 3)); i++) await caller.pause(50);
    await caller.hangUp();

    const record = await finalRecord(callId);
    expect(record.disconnection_reason).toBe('user_hangup');
    const said = (record.transcript ?? []).map((m) => [m.role, m.content] as const);
    expect(said[0]).toEqual(['agent', 'Hello.']);
    const users = said.filter(([role]) => role === 'user').map(([, text]) => text);
    // Should the cutting-in turn be missing: the call's own log lines (not the polls of its record), and the events
    // the stand-in got and sent, appends counted in runs.
    const callLogs = () =>
      t.logs.filter((line) => line.includes(`"call_id":"${callId}"`) && !line.includes('"reqId"')).slice(-80);
    const runs = (types: string[]) =>
      types
        .reduce<[string, number][]>((out, type) => {
          const last = out.at(-1);
          if (last?.[0] === type) last[1]++;
          else out.push([type, 1]);
          return out;
        }, [])
        .map(([type, n]) => (n > 1 ? `${type} ×${n}` : type))
        .join(', ');
    const got = standIn.received.map((e) => String(e.type));
    expect(
      users,
      [
        JSON.stringify(record.transcript),
        `stand-in got: ${runs(got)}`,
        `stand-in sent: ${runs(standIn.sentTypes)}`,
        ...callLogs(),
      ].join('\n'),
    ).toHaveLength(3);
    expect(wer('i want to cancel my order', users[0]!)).toBeLessThanOrEqual(0.2);
    const agents = said.filter(([role]) => role === 'agent').map(([, text]) => text);
    // The model's words, from its transcript: the tool's answer, the cut answer, the echo of the words that cut it.
    expect(agents[1]).toBe('your order is cancelled');
    const cut = agents[2]!;
    const cutWords = cut.split(' ').length;
    expect(cutWords).toBeGreaterThan(0);
    expect(cutWords).toBeLessThan(LONG_ANSWER.split(' ').length);
    expect(LONG_ANSWER.startsWith(cut)).toBe(true);
    expect(agents[3]).toBe('you said goodbye');
    // The model was told what was heard: its audio item truncated inside it, once.
    expect(standIn.truncations).toHaveLength(1);
    const truncation = standIn.truncations[0]!;
    expect(truncation.audio_end_ms).toBeGreaterThan(500);
    expect(truncation.audio_end_ms).toBeLessThan(truncation.item_ms);
    // The tool as the record keeps it.
    const items = record.transcript_with_tool_calls ?? [];
    expect(items.find((i) => i.role === 'tool_call_invocation')).toMatchObject({ name: 'cancel_order' });
    expect(items.find((i) => i.role === 'tool_call_result')).toMatchObject({ successful: true });
    // The protocol as the stand-in saw it: our end of turn commits and asks, nothing it could not read.
    const types = standIn.types();
    expect(types[0]).toBe('session.update');
    expect(types).not.toContain('invalid');
    expect(types.filter((type) => type === 'input_audio_buffer.commit')).toHaveLength(3);
    expect(types.filter((type) => type === 'response.create')).toHaveLength(4);
    expect(standIn.received[0]).toMatchObject({
      session: { audio: { input: { format: { type: 'audio/pcmu' }, turn_detection: null } } },
    });
    // The greeting the service said itself was told to the model as the assistant's words.
    expect(standIn.received).toContainEqual({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hello.' }] },
    });
    // Each answer's latency, measured as for any model.
    expect(record.latency?.e2e?.num).toBeGreaterThanOrEqual(2);
    expect(record.latency?.llm?.num).toBeGreaterThanOrEqual(3);
    expect(record.llm_token_usage?.turns).toBe(4);
    let last = 0;
    for (const m of record.transcript ?? []) {
      expect(m.start_at).toBeGreaterThanOrEqual(last);
      expect(m.end_at).toBeGreaterThanOrEqual(m.start_at);
      last = m.start_at;
    }
  }, 240_000);
});

describe('a call through Gemini Live', () => {
  it('greets, keeps only the words heard of a reply cut by a barge-in and tells the model so, and answers the words that cut in through an MCP tool', async () => {
    const { caller, callId } = await placeInboundCall(t.url, GEMINI_NUMBER);
    await agentFinished(caller, { after: 0, timeoutMs: 45_000 }); // greeting, in the agent's own voice

    const before = caller.played.length;
    await caller.speak(fixtureUlaw('13-is-the-office-open'));
    // About a second of the long answer plays, then the caller cuts in; that answer is a function call's.
    for (let i = 0; i < 900 && caller.played.length < before + 50; i++) await caller.pause(50);
    await caller.speak(fixtureUlaw('09-i-want-to-cancel'));
    for (let i = 0; i < 900 && !(await answered(callId, 2)); i++) await caller.pause(50);
    await caller.hangUp();

    const record = await finalRecord(callId);
    expect(record.disconnection_reason).toBe('user_hangup');
    const said = (record.transcript ?? []).map((m) => [m.role, m.content] as const);
    expect(said[0]).toEqual(['agent', 'Hello.']);
    const users = said.filter(([role]) => role === 'user').map(([, text]) => text);
    expect(users).toHaveLength(2);
    const agents = said.filter(([role]) => role === 'agent').map(([, text]) => text);
    const cut = agents[1]!;
    expect(cut.split(' ').length).toBeGreaterThan(0);
    expect(cut.split(' ').length).toBeLessThan(LONG_ANSWER.split(' ').length);
    expect(LONG_ANSWER.startsWith(cut)).toBe(true);
    expect(agents[2]).toBe('your order is cancelled');
    expect(mcp.received.map((r) => r.method)).toContain('tools/call');
    expect(record.llm_token_usage?.turns).toBe(2);
    // The protocol as the stand-in saw it: the documented setup, our end of turn as activityEnd, the greeting as the
    // model's words, the words heard of the cut reply as a note, the tool's output as a toolResponse.
    expect(gemini.received[0]).toMatchObject({
      kind: 'setup',
      setup: {
        tools: [{ functionDeclarations: [{ name: 'cancel_order', description: 'Cancels the caller’s order.' }] }],
        model: 'models/gemini-live-2.5-flash-preview',
        generationConfig: { speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } } },
        realtimeInputConfig: { automaticActivityDetection: { disabled: true } },
      },
    });
    expect(gemini.kinds()).not.toContain('invalid');
    expect(gemini.kinds().filter((k) => k === 'activityEnd')).toHaveLength(2);
    // Every byte of the caller's audio went inside an activity: none the model would have ignored.
    expect(gemini.outsideActivityBytes).toBe(0);
    expect(gemini.upgrades[0]?.apiKey).toBe('gm-test');
    expect(gemini.told[0]).toEqual({ role: 'model', text: 'Hello.' });
    expect(gemini.told).toContainEqual({
      role: 'user',
      text: `[system note] The caller cut your last reply short; they heard only: "${cut}"`,
    });
    expect(gemini.received.find((m) => m.kind === 'toolResponse')).toMatchObject({
      functionResponses: [{ name: 'cancel_order', response: { output: expect.stringContaining('Order cancelled') } }],
    });
  }, 120_000);
});

/** The caller asks about the office, cuts the long answer after about a second, and hears the answer to that. */
async function cutInCall(number: string): Promise<CallRecord> {
  const { caller, callId } = await placeInboundCall(t.url, number);
  await caller.pause(300);
  const before = caller.played.length;
  await caller.speak(fixtureUlaw('13-is-the-office-open'));
  for (let i = 0; i < 900 && caller.played.length < before + 50; i++) await caller.pause(50);
  await caller.speak(fixtureUlaw('08-goodbye'));
  for (let i = 0; i < 900 && !(await answered(callId, 2)); i++) await caller.pause(50);
  await caller.hangUp();
  return finalRecord(callId);
}

/** Both sides in the transcript, each with its times, in order; the cut answer a prefix of the long one. */
function expectBothSidesTimed(record: CallRecord): string[] {
  expect(record.disconnection_reason).toBe('user_hangup');
  const transcript = record.transcript ?? [];
  expect(transcript.map((m) => m.role)).toEqual(['user', 'agent', 'user', 'agent']);
  let last = 0;
  for (const m of transcript) {
    expect(m.start_at).toBeGreaterThanOrEqual(last);
    expect(m.end_at).toBeGreaterThanOrEqual(m.start_at);
    last = m.start_at;
  }
  const agents = transcript.filter((m) => m.role === 'agent').map((m) => m.content);
  const cut = agents[0]!;
  expect(cut.split(' ').length).toBeLessThan(LONG_ANSWER.split(' ').length);
  expect(LONG_ANSWER.startsWith(cut)).toBe(true);
  expect(agents[1]).toBe('you said goodbye');
  expect(record.latency?.e2e?.num).toBeGreaterThanOrEqual(1);
  return agents;
}

describe('the model’s own turn detection (llm.turn_detection "model")', () => {
  it('the model ends the caller’s turns and answers by itself, its speech start over the agent is a barge-in, and the transcript keeps both sides with times', async () => {
    const openAiFrom = standIn.received.length;
    const truncationsFrom = standIn.truncations.length;
    const geminiFrom = gemini.received.length;
    const [openAi, viaGemini] = await Promise.all([
      cutInCall(MODEL_TURNS_NUMBER),
      cutInCall(GEMINI_MODEL_TURNS_NUMBER),
    ]);

    expectBothSidesTimed(openAi);
    // The session asked for server_vad, never committed nor asked for a response: the model did both.
    const sent = standIn.received.slice(openAiFrom);
    expect(sent[0]).toMatchObject({
      type: 'session.update',
      session: { audio: { input: { turn_detection: { type: 'server_vad' } } } },
    });
    const types = sent.map((e) => e.type);
    expect(types).not.toContain('invalid');
    expect(types).not.toContain('input_audio_buffer.commit');
    expect(types).not.toContain('response.create');
    // The barge-in truncated the model's audio item to what was played.
    const truncations = standIn.truncations.slice(truncationsFrom);
    expect(truncations).toHaveLength(1);
    expect(truncations[0]!.audio_end_ms).toBeLessThan(truncations[0]!.item_ms);

    const cut = expectBothSidesTimed(viaGemini)[0]!;
    const received = gemini.received.slice(geminiFrom);
    expect(received[0]).toMatchObject({
      kind: 'setup',
      setup: { realtimeInputConfig: { automaticActivityDetection: { disabled: false } } },
    });
    const kinds = received.map((m) => m.kind);
    expect(kinds).not.toContain('invalid');
    expect(kinds).not.toContain('activityStart');
    expect(kinds).not.toContain('activityEnd');
    expect(gemini.told).toContainEqual({
      role: 'user',
      text: `[system note] The caller cut your last reply short; they heard only: "${cut}"`,
    });
  }, 120_000);
});
