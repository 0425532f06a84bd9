import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { WebSocketServer } from 'ws';
import type { AgentVersion } from '../../../src/agents/schema.ts';
import { parseSimNumbers } from '../../../src/carriers/sim/numbers.ts';
import { loadSimScript } from '../../../src/carriers/sim/script.ts';
import { SimDialer } from '../../../src/carriers/sim/sim-dialer.ts';
import type { DialRequest } from '../../../src/records/dialer.ts';
import { NoCarrierDialer } from '../../../src/carriers/carriers.ts';
import type { CallOutcomes } from '../../../src/carriers/outcomes.ts';

const dir = mkdtempSync(join(tmpdir(), 'sim-'));
beforeAll(() => {
  execFileSync('flite', ['-t', 'yes please', '-o', join(dir, 'yes.wav')]);
  writeFileSync(
    join(dir, 'hello.json'),
    JSON.stringify({ steps: [{ wait_ms: 100 }, { say: 'yes.wav' }, { hangup: true }] }),
  );
});

describe('SIM_NUMBERS', () => {
  it('reads number=behavior[:script] pairs and the same map from a JSON file', () => {
    const phones = parseSimNumbers('+15550001=answer:hello, +15550002=no_answer,+15550003=fail,+15550004=voicemail');
    expect(Object.fromEntries(phones)).toEqual({
      '+15550001': { behavior: 'answer', script: 'hello' },
      '+15550002': { behavior: 'no_answer', script: undefined },
      '+15550003': { behavior: 'fail', script: undefined },
      '+15550004': { behavior: 'voicemail', script: undefined },
    });
    const file = join(dir, 'numbers.json');
    writeFileSync(file, JSON.stringify({ '+15550009': 'busy' }));
    expect(parseSimNumbers(file).get('+15550009')).toEqual({ behavior: 'busy', script: undefined });
  });

  it.each(['5550001=answer', '+15550001=ring', '+15550001=fail:script', '+15550001=answer:../x', '/no/such/file.json'])(
    'refuses %s',
    (value) => {
      expect(() => parseSimNumbers(value)).toThrow(/SIM_NUMBERS/);
    },
  );
});

describe('simulated phones', () => {
  let wss: WebSocketServer;
  let mediaUrl = '';
  const received: { start?: Record<string, unknown>; media: Buffer[] }[] = [];
  beforeAll(async () => {
    wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((resolve) => wss.once('listening', resolve));
    mediaUrl = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/media/twilio`;
    wss.on('connection', (ws) => {
      const stream: (typeof received)[number] = { media: [] };
      received.push(stream);
      ws.on('message', (data) => {
        const m = JSON.parse(data.toString()) as {
          event: string;
          start?: Record<string, unknown>;
          media?: { payload: string };
        };
        if (m.event === 'start') stream.start = m.start;
        if (m.event === 'media') stream.media.push(Buffer.from(m.media!.payload, 'base64'));
      });
    });
  });
  afterAll(() => new Promise((resolve) => wss.close(resolve)));

  const reports: string[] = [];
  const outcomes = {
    noAnswer: (id: string) => reports.push(`no-answer ${id}`),
    failed: (id: string) => reports.push(`failed ${id}`),
    machineAnswered: (id: string) => reports.push(`machine ${id}`),
    completed: (id: string) => reports.push(`completed ${id}`),
  } as unknown as CallOutcomes;

  const agent = (voicemail_detection: boolean) => ({ config: { voicemail_detection } }) as AgentVersion;
  const request = (to: string, callId: string, detection = false): DialRequest => ({
    orgId: 'acme',
    callId,
    from: '+14155550100',
    to,
    presentationNumber: null,
    agent: agent(detection),
    streamSecret: `secret-${callId}`,
  });

  async function dialer() {
    return new SimDialer({
      phones: parseSimNumbers(
        '+15550001=answer:hello,+15550002=no_answer,+15550003=fail,+15550004=voicemail,+15550005=busy',
      ),
      scripts: new Map([['hello', await loadSimScript(dir, 'hello')]]),
      mediaUrl: () => mediaUrl,
      outcomes: () => outcomes,
      ringTimeoutMs: 120,
      answerDelayMs: 10,
      fallback: new NoCarrierDialer(),
      log: pino({ level: 'silent' }),
    });
  }

  it('an answering phone opens the Twilio media stream with call_id and secret and speaks its script, then hangs up', async () => {
    const sim = await dialer();
    expect(await sim.dial(request('+15550001', 'call_a'))).toEqual({ status: 'dialing', carrierCallId: 'SIMcall_a' });
    await vi.waitFor(() => expect(reports).toContain('completed call_a'), { timeout: 5_000 });
    const stream = received.at(-1)!;
    expect(stream.start!.customParameters).toEqual({ call_id: 'call_a', secret: 'secret-call_a' });
    // "yes please" is well over 200 ms of audio: more than ten frames that are not silence.
    const voiced = stream.media.filter((frame) => frame.some((b) => b !== 0xff));
    expect(voiced.length).toBeGreaterThan(10);
  });

  it('a phone nobody answers reports no-answer after the ring timeout; fail and busy refuse at once', async () => {
    const sim = await dialer();
    const started = performance.now();
    await sim.dial(request('+15550002', 'call_b'));
    await vi.waitFor(() => expect(reports).toContain('no-answer call_b'), { timeout: 2_000, interval: 5 });
    expect(performance.now() - started).toBeGreaterThanOrEqual(115);
    expect(await sim.dial(request('+15550003', 'call_c'))).toMatchObject({ status: 'failed', reason: 'dial_failed' });
    expect(await sim.dial(request('+15550005', 'call_e'))).toMatchObject({
      status: 'failed',
      reason: 'dial_failed',
      message: expect.stringMatching(/busy/),
    });
  });

  it('a voicemail phone is reported as a machine when the agent asked for detection', async () => {
    const sim = await dialer();
    await sim.dial(request('+15550004', 'call_d', true));
    await vi.waitFor(() => expect(reports).toContain('machine call_d'), { timeout: 2_000 });
  });

  it('sends numbers it does not simulate to the fallback carrier', async () => {
    const sim = await dialer();
    expect(await sim.dial(request('+14155550123', 'call_f'))).toMatchObject({
      status: 'failed',
      message: expect.stringMatching(/carrier/i),
    });
  });

  it('hangs up a ringing call on request: nothing is reported afterwards', async () => {
    const sim = await dialer();
    await sim.dial(request('+15550002', 'call_g'));
    await sim.hangUpCall('call_g');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(reports).not.toContain('no-answer call_g');
  });

  it('passes the hang-up of a call it did not place to the fallback carrier, which placed it', async () => {
    const hungUp: string[] = [];
    const fallback = Object.assign(new NoCarrierDialer(), {
      hangUpCall: async (callId: string) => void hungUp.push(callId),
    });
    const sim = new SimDialer({
      phones: parseSimNumbers('+15550002=no_answer'),
      scripts: new Map(),
      mediaUrl: () => mediaUrl,
      outcomes: () => outcomes,
      ringTimeoutMs: 120,
      answerDelayMs: 10,
      fallback,
      log: pino({ level: 'silent' }),
    });
    await sim.dial(request('+15550002', 'call_s'));
    await sim.hangUpCall('call_s');
    await sim.hangUpCall('call_placed_by_twilio');
    expect(hungUp).toEqual(['call_placed_by_twilio']);
  });
});

describe('shipped scripts', () => {
  it.each(['book-appointment', 'short-hello'])('%s loads with every phrase it names', async (name) => {
    const script = await loadSimScript(join(import.meta.dirname, '..', '..', '..', 'media', 'sim-scripts'), name);
    expect(script.steps.filter((s) => s.kind === 'say').length).toBeGreaterThan(0);
  });
});
