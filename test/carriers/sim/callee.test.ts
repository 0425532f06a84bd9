// A simulated callee listens the way a person does: against a fake agent on a real socket that
// plays utterances bracketed by their marks, each rule of its script steps is checked by when the
// callee's voice reaches the agent.
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { HUMAN_PAUSE_MS, SimCallee, type AgentWordsSource } from '../../../src/carriers/sim/callee.ts';
import { loadSimScript, type SimStep } from '../../../src/carriers/sim/script.ts';
import { TwilioStreamCaller } from '../../../src/carriers/sim/twilio-stream.ts';
import { utteranceMark } from '../../../src/call/agent/utterance.ts';
import { dtmfTones } from '../../../src/audio/dtmf.ts';
import { muLawEncode } from '../../../src/audio/g711.ts';

/** 160 bytes of loud μ-law per 20 ms frame; 0xff is silence. */
const LOUD = (ms: number) => new Uint8Array((ms / 20) * 160).fill(0x00);

interface FakeAgent {
  socket: WebSocket;
  /** Keys the callee pressed (dtmf events), in order. */
  keys: string[];
  streamSid: string;
  /** performance.now() of the first loud caller frame. */
  callerSpokeAt: Promise<number>;
  /** performance.now() at which each mark came back from the callee. */
  echoed: Map<string, number>;
}

let wss: WebSocketServer;
let url = '';
const agents: FakeAgent[] = [];
const waiting: ((agent: FakeAgent) => void)[] = [];

beforeAll(async () => {
  wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((resolve) => wss.once('listening', resolve));
  url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/media/twilio`;
  wss.on('connection', (socket) => {
    let spoke: (at: number) => void = () => undefined;
    const agent: FakeAgent = {
      socket,
      keys: [],
      streamSid: '',
      callerSpokeAt: new Promise((resolve) => (spoke = resolve)),
      echoed: new Map(),
    };
    socket.on('message', (data) => {
      const m = JSON.parse(data.toString()) as {
        event: string;
        streamSid?: string;
        media?: { payload: string };
        mark?: { name: string };
        dtmf?: { digit: string };
      };
      if (m.event === 'dtmf') agent.keys.push(m.dtmf!.digit);
      if (m.event === 'start') {
        agent.streamSid = m.streamSid!;
        const next = waiting.shift();
        if (next) next(agent);
        else agents.push(agent);
      }
      if (m.event === 'media' && Buffer.from(m.media!.payload, 'base64').some((b) => b !== 0xff))
        spoke(performance.now());
      if (m.event === 'mark') agent.echoed.set(m.mark!.name, performance.now());
    });
  });
});
afterAll(() => new Promise((resolve) => wss.close(resolve)));

const nextAgent = (): Promise<FakeAgent> =>
  new Promise((resolve) => (agents.length > 0 ? resolve(agents.shift()!) : waiting.push(resolve)));

/** The agent says one utterance: its start mark, `ms` of audio, its end mark. */
function utter(agent: FakeAgent, id: number, ms: number): void {
  const send = (message: Record<string, unknown>) =>
    agent.socket.send(JSON.stringify({ ...message, streamSid: agent.streamSid }));
  send({ event: 'mark', mark: { name: utteranceMark.start(id) } });
  send({
    event: 'media',
    media: { payload: Buffer.from(new Uint8Array((ms / 20) * 160).fill(0x10)).toString('base64') },
  });
  send({ event: 'mark', mark: { name: utteranceMark.end(id) } });
}

/** The agent presses `keys`: their tones, as an utterance of the line. */
function press(agent: FakeAgent, id: number, keys: string): void {
  const send = (message: Record<string, unknown>) =>
    agent.socket.send(JSON.stringify({ ...message, streamSid: agent.streamSid }));
  send({ event: 'mark', mark: { name: utteranceMark.start(id) } });
  send({ event: 'media', media: { payload: Buffer.from(muLawEncode(dtmfTones(keys, 8000))).toString('base64') } });
  send({ event: 'mark', mark: { name: utteranceMark.end(id) } });
}

let latestSim: SimCallee | undefined;

async function callee(steps: SimStep[], options: { random?: number; agentWords?: AgentWordsSource } = {}) {
  const caller = new TwilioStreamCaller({ url, customParameters: {} });
  const lines: string[] = [];
  const log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
  await caller.connect();
  const agent = await nextAgent();
  const sim = new SimCallee({
    caller,
    script: { name: 'test', steps, maxMs: 0 },
    random: () => options.random ?? 0,
    agentWords: options.agentWords,
    log,
  });
  latestSim = sim;
  return { caller, agent, run: sim.run(), lines };
}

describe('a simulated callee', () => {
  it('wait_for_agent: speaks only after the agent has spoken, its words have played and a pause of 300-800 ms passed', async () => {
    const { caller, agent, run } = await callee(
      [
        { kind: 'wait_for_agent', timeoutMs: 10_000 },
        { kind: 'say', file: 'x', mulaw: LOUD(200) },
      ],
      { random: 0.5 },
    );
    await new Promise((r) => setTimeout(r, 300)); // nothing said yet: the callee keeps waiting
    utter(agent, 1, 400);
    const spokeAt = await agent.callerSpokeAt;
    expect(await run).toEqual({ ok: true });
    const heardEnd = agent.echoed.get('u1:end')!;
    const pause = HUMAN_PAUSE_MS.min + 0.5 * (HUMAN_PAUSE_MS.max - HUMAN_PAUSE_MS.min);
    expect(spokeAt - heardEnd).toBeGreaterThanOrEqual(pause - 5);
    expect(spokeAt - heardEnd).toBeLessThan(HUMAN_PAUSE_MS.max + 150); // not waiting for anything else
    await caller.hangUp();
  });

  it('wait_for_agent: an utterance that starts within the pause is listened to before speaking', async () => {
    const { caller, agent, run } = await callee(
      [
        { kind: 'wait_for_agent', timeoutMs: 10_000 },
        { kind: 'say', file: 'x', mulaw: LOUD(200) },
      ],
      { random: 0 },
    );
    utter(agent, 1, 200);
    await new Promise((r) => setTimeout(r, 350)); // the first has played; the pause (300 ms) is running
    utter(agent, 2, 300);
    const spokeAt = await agent.callerSpokeAt;
    await run;
    expect(spokeAt).toBeGreaterThan(agent.echoed.get('u2:end')! + HUMAN_PAUSE_MS.min - 5);
    await caller.hangUp();
  });

  it('wait_for_agent: fails the script and logs it when the agent does not finish in time', async () => {
    const { caller, run, lines } = await callee([
      { kind: 'wait_for_agent', timeoutMs: 300 },
      { kind: 'say', file: 'x', mulaw: LOUD(200) },
    ]);
    expect(await run).toEqual({ ok: false, step: 0, reason: 'the agent had not spoken and finished within 300 ms' });
    expect(lines.some((l) => l.includes('script failed'))).toBe(true);
    await caller.hangUp();
  });

  it('barge_in_after_ms: cuts in that long after the agent starts speaking', async () => {
    const { caller, agent, run } = await callee([
      { kind: 'barge_in', afterMs: 400 },
      { kind: 'say', file: 'x', mulaw: LOUD(200) },
    ]);
    utter(agent, 1, 2_000);
    const spokeAt = await agent.callerSpokeAt;
    await run;
    const started = agent.echoed.get('u1:start')!;
    expect(spokeAt - started).toBeGreaterThanOrEqual(395);
    expect(spokeAt - started).toBeLessThan(400 + 300);
    expect(agent.echoed.has('u1:end')).toBe(false); // still speaking when the callee cut in
    await caller.hangUp();
  });

  it("expect: goes on when the agent's words since the caller spoke match, and fails naming what was heard when they do not", async () => {
    let say: (text: string) => void = () => undefined;
    const words: AgentWordsSource = (onWords) => (say = onWords);
    const ok = await callee(
      [
        { kind: 'wait_for_agent', timeoutMs: 5_000 },
        { kind: 'expect', pattern: /your name/i },
      ],
      { agentWords: words },
    );
    utter(ok.agent, 1, 100);
    setTimeout(() => say('May I have your name, please?'), 150);
    expect(await ok.run).toEqual({ ok: true });
    await ok.caller.hangUp();

    const bad = await callee(
      [
        { kind: 'wait_for_agent', timeoutMs: 5_000 },
        { kind: 'expect', pattern: /day and time/i },
      ],
      { agentWords: words },
    );
    utter(bad.agent, 1, 100);
    setTimeout(() => say('Goodbye!'), 150);
    expect(await bad.run).toEqual({
      ok: false,
      step: 1,
      reason: 'expected the agent to say /day and time/i, heard "Goodbye!"',
    });
    expect(bad.lines.some((l) => l.includes('day and time'))).toBe(true);
    await bad.caller.hangUp();
  });

  it('digits: presses each key as a dtmf event, 200 ms apart', async () => {
    const { caller, agent, run } = await callee([{ kind: 'digits', keys: '12#' }]);
    const started = performance.now();
    expect(await run).toEqual({ ok: true });
    expect(performance.now() - started).toBeGreaterThanOrEqual(3 * 200 - 40);
    await new Promise((r) => setTimeout(r, 50));
    expect(agent.keys).toEqual(['1', '2', '#']);
    await caller.hangUp();
  });

  it('wait_for_digits: hears the keys the agent plays as tones and follows the branch for them', async () => {
    const menu: SimStep = {
      kind: 'wait_for_digits',
      count: 1,
      timeoutMs: 5_000,
      branches: new Map([
        ['1', [{ kind: 'digits', keys: '9' }]],
        ['2', [{ kind: 'digits', keys: '8' }]],
      ]),
    };
    const { caller, agent, run } = await callee([menu, { kind: 'digits', keys: '0' }]);
    press(agent, 1, '2');
    expect(await run).toEqual({ ok: true });
    await new Promise((r) => setTimeout(r, 50));
    expect(agent.keys).toEqual(['8', '0']);
    await caller.hangUp();
  });

  it('wait_for_digits: fails naming the keys when the agent presses one the menu does not take, or none in time', async () => {
    const menu: SimStep = { kind: 'wait_for_digits', count: 1, timeoutMs: 3_000, branches: new Map([['1', []]]) };
    const wrong = await callee([menu]);
    press(wrong.agent, 1, '5');
    expect(await wrong.run).toEqual({ ok: false, step: 0, reason: 'the agent pressed "5"; this menu takes "1"' });
    await wrong.caller.hangUp();
    const late = await callee([{ kind: 'wait_for_digits', count: 2, timeoutMs: 600, branches: null }]);
    press(late.agent, 1, '4');
    expect(await late.run).toEqual({ ok: false, step: 0, reason: 'expected 2 keys within 600 ms, heard "4"' });
    await late.caller.hangUp();
  });

  it('holds through a transfer, and on the line back does again the step the line went away under, listening for the agent anew', async () => {
    const { caller, run } = await callee(
      [
        { kind: 'wait_for_agent', timeoutMs: 10_000 },
        { kind: 'say', file: 'x', mulaw: LOUD(100) },
      ],
      { random: 0 },
    );
    const sim = latestSim!;
    sim.hold();
    await caller.hangUp();
    // The agent's stream is gone; the callee waits, saying nothing.
    await new Promise((r) => setTimeout(r, 300));
    const back = new TwilioStreamCaller({ url, customParameters: {} });
    await back.connect();
    const agentBack = await nextAgent();
    sim.resume(back);
    // It listens for the agent on the new line before it speaks there.
    await new Promise((r) => setTimeout(r, 200));
    utter(agentBack, 7, 200);
    const spokeAt = await agentBack.callerSpokeAt;
    expect(spokeAt - (agentBack.echoed.get(utteranceMark.end(7)) ?? 0)).toBeGreaterThanOrEqual(HUMAN_PAUSE_MS.min - 40);
    expect(await run).toEqual({ ok: true });
    expect(sim.line).toBe(back);
    await back.hangUp();
  });
});

describe('sim scripts', () => {
  it('load the listening, keypad and menu steps (branches nested), and refuse an expect that is not a regular expression or keys a phone lacks', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-script-'));
    writeFileSync(
      join(dir, 'ok.json'),
      JSON.stringify({ steps: [{ wait_for_agent: true }, { barge_in_after_ms: 250 }, { expect: 'name|time' }] }),
    );
    const script = await loadSimScript(dir, 'ok');
    expect(script.steps).toEqual([
      { kind: 'wait_for_agent', timeoutMs: 30_000 },
      { kind: 'barge_in', afterMs: 250 },
      { kind: 'expect', pattern: /name|time/i },
    ]);
    writeFileSync(
      join(dir, 'menu.json'),
      JSON.stringify({
        steps: [
          {
            wait_for_digits: 1,
            branches: { '1': [{ digits: '42#' }, { wait_for_digits: 2, timeout_ms: 500 }], '2': [{ hangup: true }] },
          },
        ],
      }),
    );
    expect((await loadSimScript(dir, 'menu')).steps).toEqual([
      {
        kind: 'wait_for_digits',
        count: 1,
        timeoutMs: 15_000,
        branches: new Map([
          [
            '1',
            [
              { kind: 'digits', keys: '42#' },
              { kind: 'wait_for_digits', count: 2, timeoutMs: 500, branches: null },
            ],
          ],
          ['2', [{ kind: 'hangup' }]],
        ]),
      },
    ]);
    writeFileSync(join(dir, 'keys.json'), JSON.stringify({ steps: [{ digits: '12x' }] }));
    await expect(loadSimScript(dir, 'keys')).rejects.toThrow(/steps.0.digits: keypad keys/);
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ steps: [{ expect: '(unclosed' }] }));
    await expect(loadSimScript(dir, 'bad')).rejects.toThrow(/steps.0.expect: not a valid regular expression/);
  });
});
