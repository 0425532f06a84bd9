// A provider killed mid-call: a phone call whose recogniser, voice and model are OpenAI-compatible HTTP servers on
// loopback goes on when all three are killed after the first turn. The recogniser moves to the embedded one (not
// listed: the last resort), the voice to flite (likewise), the model to the agent's llm.fallback; the caller keeps
// hearing the agent, and the record and the metrics show each move.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallRecord, ProviderUse } from '../../src/records/record.ts';
import { agentFinished, fixtureText, fixtureUlaw, placeInboundCall } from '../helpers/phone.ts';
import { callEnded, startTestService, type TestService } from '../helpers/service.ts';

const NUMBER = '+15550700041';
const METRICS_TOKEN = 'fallbacks-metrics-token-0123456789';
const FIRST = '07-what-are-your-opening';
const SECOND = '13-is-the-office-open';
const THIRD = '12-i-am-calling-about';

/** A stand-in server on 127.0.0.1 that can be killed: its port refuses connections from then on. */
interface StandIn {
  url: string;
  requests: number;
  kill(): Promise<void>;
}

async function standIn(answer: (path: string, body: string, res: import('node:http').ServerResponse) => void) {
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('latin1')));
    req.on('end', () => {
      handle.requests++;
      answer(req.url ?? '', body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const handle: StandIn = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests: 0,
    kill: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Kept-alive connections too: the service's pool must find the server gone.
        server.closeAllConnections();
      }),
  };
  return handle;
}

/** A chat-completions stream of `text`, in a few chunks. */
function chatStream(res: import('node:http').ServerResponse, text: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const piece of text.split(/(?<= )/))
    res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: piece } }] })}\n\n`);
  res.end(`data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`);
}

let t: TestService;
let stt: StandIn;
let voice: StandIn;
let model: StandIn;
let backupModel: StandIn;
/** What the stand-in recogniser answers for each utterance, in order: the words the caller's fixture says. */
const heard = [fixtureText(FIRST)];

beforeAll(async () => {
  stt = await standIn((_path, _body, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ text: heard.shift() ?? '' }));
  });
  // 24 kHz PCM, as OpenAI's speech endpoint answers "pcm": 300 ms of a tone per sentence.
  voice = await standIn((_path, _body, res) => {
    const pcm = new Int16Array(7200).map((_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 24000)));
    res.writeHead(200, { 'content-type': 'audio/pcm' }).end(Buffer.from(pcm.buffer));
  });
  model = await standIn((_path, _body, res) => chatStream(res, 'We open at nine.'));
  backupModel = await standIn((_path, _body, res) => chatStream(res, 'The backup model here, happy to help.'));
  // Started as npm start starts it: the embedded voice's workers warm, as a production service's are.
  t = await startTestService({ METRICS_TOKEN }, { warmSpeech: true });
  const created = await t.request('POST', '/v2/agents', {
    body: {
      agent_id: 'fallbacks',
      agent_name: 'Fallbacks',
      inbound_numbers: [NUMBER],
      begin_message: 'Hello.',
      llm: {
        base_url: model.url,
        model: 'primary-model',
        fallback: [{ base_url: backupModel.url, model: 'backup-model' }],
      },
      // No fallback listed: the embedded engines are the last resort all the same.
      stt: { engine: 'openai', base_url: stt.url },
      voice: { engine: 'openai', base_url: voice.url, voice_id: 'alloy' },
      endpointing: { mode: 'silence' },
    },
  });
  expect(created.status).toBe(201);
}, 60_000);

afterAll(async () => {
  await t?.stop();
  for (const s of [stt, voice, model, backupModel]) await s?.kill();
});

function providers(record: CallRecord, kind: ProviderUse['kind']): ProviderUse[] {
  return (record.latency?.providers ?? []).filter((p) => p.kind === kind);
}

describe('fallbacks on a phone call', () => {
  it('a recogniser, voice and model killed mid-call: the call goes on with the next of each, and the record and metrics show the moves', async () => {
    const { caller, callId } = await placeInboundCall(t.url, NUMBER);
    await agentFinished(caller, { after: 0, timeoutMs: 15_000 });
    // Turn 1: every primary serves.
    let before = caller.played.length;
    await caller.speak(fixtureUlaw(FIRST));
    await agentFinished(caller, { after: before, timeoutMs: 15_000 });
    expect(model.requests).toBe(1);
    await Promise.all([stt.kill(), voice.kill(), model.kill()]);

    // Turn 2: the recogniser's request is refused; the turn is asked again, by the voice after the refused one.
    before = caller.played.length;
    await caller.speak(fixtureUlaw(SECOND));
    await agentFinished(caller, { after: before, timeoutMs: 15_000 });
    // Turn 3: the embedded recogniser hears it, the refused model hands the turn to the backup.
    before = caller.played.length;
    await caller.speak(fixtureUlaw(THIRD));
    await agentFinished(caller, { after: before, timeoutMs: 15_000 });
    await caller.hangUp();

    const record = await callEnded(t, callId, 20_000);
    expect(record.disconnection_reason).toBe('user_hangup');
    const agentSaid = (record.transcript ?? []).filter((m) => m.role === 'agent');
    expect(agentSaid.map((m) => m.content)).toEqual([
      'Hello.',
      'We open at nine.',
      "Sorry, I didn't catch that. Could you say it again?",
      'The backup model here, happy to help.',
    ]);
    expect(providers(record, 'stt')).toMatchObject([
      { name: 'openai', position: 0, switched_at: null, reason: null, first_turn: 1, last_turn: 1 },
      { name: 'pocketsphinx', position: 1, reason: 'connect', first_turn: 2, last_turn: 2 },
    ]);
    expect(providers(record, 'voice')).toMatchObject([
      { name: 'openai', position: 0, first_turn: 0, last_turn: 1 },
      { name: 'flite', position: 1, reason: 'connect', first_turn: 1, last_turn: 2 },
    ]);
    expect(providers(record, 'llm')).toMatchObject([
      { name: 'primary-model', position: 0, first_turn: 1, last_turn: 1 },
      { name: 'backup-model', position: 1, reason: 'connect', first_turn: 2, last_turn: 2 },
    ]);
    // Every stage measured before stays as it was.
    expect(record.latency?.e2e?.num).toBe(2);
    expect(record.latency?.tts).toBeDefined();

    // The timeline of the voice's move: refused at t, flite's first words heard at t + x.
    const voiceMove = providers(record, 'voice')[1]!.switched_at!;
    const sorry = agentSaid[2]!;
    const llmMove = providers(record, 'llm')[1]!.switched_at!;
    const backupReply = agentSaid[3]!;
    console.log(
      `fallback timeline (call clock, s): recogniser refused → pocketsphinx at ${providers(record, 'stt')[1]!.switched_at}; ` +
        `voice refused → flite at ${voiceMove}, flite heard from ${sorry.start_at} (+${Math.round((sorry.start_at - voiceMove) * 1000)} ms); ` +
        `model refused → backup at ${llmMove}, backup's reply heard from ${backupReply.start_at} (+${Math.round((backupReply.start_at - llmMove) * 1000)} ms)`,
    );
    expect(sorry.start_at).toBeGreaterThanOrEqual(voiceMove);
    expect(backupReply.start_at).toBeGreaterThanOrEqual(llmMove);

    const metrics = await (
      await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    ).text();
    for (const series of [
      'voicecall_provider_fallbacks_total{kind="stt",from="openai",to="pocketsphinx",reason="connect"} 1',
      'voicecall_provider_fallbacks_total{kind="voice",from="openai",to="flite",reason="connect"} 1',
      'voicecall_provider_fallbacks_total{kind="llm",from="primary",to="fallback_1",reason="connect"} 1',
    ])
      expect(metrics).toContain(series);
  }, 60_000);
});
