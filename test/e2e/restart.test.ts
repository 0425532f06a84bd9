// The service as a real process: SIGTERM during a call drains then ends it with
// error_service; kill -9 during a call leaves it for the next start to finalize, and an agent
// test run under way ends as an error.
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { freePort } from '../helpers/net.ts';
import { webhookReceiver } from '../helpers/webhook-receiver.ts';
import { apiAs, startServiceProcess } from '../helpers/service-process.ts';
import { z } from 'zod';
import { AgentTestSchema, TestRunSchema } from '../../src/agent-tests/schema.ts';
import { CallRecordSchema } from '../../src/records/record.ts';
import { agentFinished, fixtureUlaw, placeInboundCall, voiceWebhook } from '../helpers/phone.ts';
import { decodeWav } from '../../src/audio/wav.ts';

const KEY = 'restart-key-0123456789-0123456789-0123';
const NUMBER = '+15550300001';
const children: ChildProcess[] = [];
const TestListSchema = z.object({ tests: z.array(AgentTestSchema) });
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

const startProcess = (dataDir: string, port: number) =>
  startServiceProcess({ dataDir, port, key: KEY, started: children });

const api = apiAs(KEY);

async function serviceWithPhoneAgent() {
  const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-restart-'));
  const port = await freePort();
  const first = await startProcess(dataDir, port);
  const res = await api(first.url, 'PATCH', '/v2/agents/demo', {
    inbound_numbers: [NUMBER],
    inactivity_timeout_ms: 60_000,
  });
  expect(res.status).toBe(200);
  expect((await api(first.url, 'POST', '/v2/agents/demo/publish')).status).toBe(200);
  return { dataDir, port, first };
}

describe('the service process and calls under way', () => {
  it('SIGTERM: stops accepting, lets the call run for the drain time, then ends it with error_service and exits 0', async () => {
    const { dataDir, port, first } = await serviceWithPhoneAgent();
    const { caller, callId } = await placeInboundCall(first.url, NUMBER);
    await agentFinished(caller, { after: 0, timeoutMs: 20_000 });
    first.child.kill('SIGTERM');
    await caller.waitForClose();
    expect(await first.exited).toBe(0);

    const second = await startProcess(dataDir, port);
    const record = CallRecordSchema.parse(await (await api(second.url, 'GET', `/v2/calls/${callId}`)).json());
    expect(record).toMatchObject({
      call_status: 'error',
      disconnection_reason: 'error_service',
      disconnection_message: 'The service shut down during the call.',
    });
    expect(record.transcript!.length).toBeGreaterThan(0);
    expect(record.end_timestamp).not.toBeNull();
  }, 90_000);

  it('kill -9: the call left ongoing keeps what was said, its recording and its charge; a call still registered ends; a stray recording goes; webhooks the receiver missed arrive after', async () => {
    const { dataDir, port, first } = await serviceWithPhoneAgent();
    // The organization's webhook receiver is down until after the crash.
    const hookPort = await freePort();
    expect(
      (await api(first.url, 'PUT', '/v2/webhook-settings', { webhook_url: `http://127.0.0.1:${hookPort}/hooks` }))
        .status,
    ).toBe(200);
    const { caller, callId } = await placeInboundCall(first.url, NUMBER);
    await agentFinished(caller, { after: 0, timeoutMs: 20_000 });
    await caller.speak(fixtureUlaw('04-yes-please'));
    // The caller's words are in the record as soon as they are recognised.
    await vi.waitFor(
      async () => {
        const live = CallRecordSchema.parse(await (await api(first.url, 'GET', `/v2/calls/${callId}`)).json());
        expect(live.transcript?.some((m) => m.role === 'user')).toBe(true);
      },
      { timeout: 20_000, interval: 100 },
    );
    // A second call the carrier announced but whose stream never came.
    const waiting = await voiceWebhook(first.url, { CallSid: `CA${'1'.repeat(32)}`, From: '+14155550100', To: NUMBER });
    const waitingId = /name="call_id" value="([^"]+)"/.exec(await waiting.text())![1]!;
    first.child.kill('SIGKILL');
    await caller.waitForClose();
    await first.exited;
    writeFileSync(join(dataDir, 'recordings', 'call_nobody.wav'), 'left by nobody');

    const receiver = await webhookReceiver(hookPort);
    const hooks = receiver.hooks;
    const second = await startProcess(dataDir, port);
    const record = CallRecordSchema.parse(await (await api(second.url, 'GET', `/v2/calls/${callId}`)).json());
    expect(record).toMatchObject({
      call_status: 'error',
      disconnection_reason: 'error_service',
      disconnection_message: 'The service stopped during the call.',
    });
    expect(record.transcript!.map((m) => m.role).slice(0, 2)).toEqual(['agent', 'user']);
    expect(record.transcript![0]!.content).toMatch(/demo front desk/);
    expect(record.duration_ms).toBeGreaterThan(0);
    expect(record.call_cost!.total_credits_used).toBeGreaterThan(0);
    expect(record.recording_url).toBe(`${second.url}/v2/calls/${callId}/recording`);
    const recording = await api(second.url, 'GET', `/v2/calls/${callId}/recording`);
    expect(recording.status).toBe(200);
    const wav = decodeWav(new Uint8Array(await recording.arrayBuffer()), 16000);
    expect(wav.samples.length / 16000).toBeGreaterThan(1);
    const stale = CallRecordSchema.parse(await (await api(second.url, 'GET', `/v2/calls/${waitingId}`)).json());
    expect(stale).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'dial_failed' });
    expect(existsSync(join(dataDir, 'recordings', 'call_nobody.wav'))).toBe(false);
    // Written with the record's change before the crash (started) and at recovery (ended): none lost, in order.
    await vi.waitFor(
      () =>
        expect(hooks.filter((h) => h.callId === callId).map((h) => h.event)).toEqual(['call_started', 'call_ended']),
      { timeout: 20_000, interval: 100 },
    );
    await receiver.close();
    // Finalized once: a third start changes nothing.
    second.child.kill('SIGTERM');
    await second.exited;
    const third = await startProcess(dataDir, port);
    const again = CallRecordSchema.parse(await (await api(third.url, 'GET', `/v2/calls/${callId}`)).json());
    expect(again.end_timestamp).toBe(record.end_timestamp);
    expect(again.call_cost).toEqual(record.call_cost);
  }, 120_000);

  it('kill -9 during an agent test run: the next start ends the run as an error, its unfinished test saying why, and its call as error_service', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-restart-'));
    const port = await freePort();
    const first = await startProcess(dataDir, port);
    const { tests } = TestListSchema.parse(
      await (await api(first.url, 'POST', '/v2/agents/demo/tests/list', {})).json(),
    );
    const started = await api(first.url, 'POST', '/v2/agents/demo/test-runs', { test_ids: [tests[0]!.test_id] });
    expect(started.status).toBe(201);
    const { run_id } = TestRunSchema.parse(await started.json());
    // The running test names its call at once; the kill comes once that call is under way.
    const callId = await vi.waitFor(
      async () => {
        const id = TestRunSchema.parse(await (await api(first.url, 'GET', `/v2/test-runs/${run_id}`)).json())
          .results[0]!.call_id;
        expect(id).not.toBeNull();
        expect(CallRecordSchema.parse(await (await api(first.url, 'GET', `/v2/calls/${id!}`)).json()).call_status).toBe(
          'ongoing',
        );
        return id!;
      },
      { timeout: 20_000, interval: 200 },
    );
    first.child.kill('SIGKILL');
    await first.exited;

    const second = await startProcess(dataDir, port);
    const run = TestRunSchema.parse(await (await api(second.url, 'GET', `/v2/test-runs/${run_id}`)).json());
    expect(run).toMatchObject({
      status: 'error',
      summary: { errored: 1 },
      results: [
        { status: 'error', call_id: callId, error: 'the service restarted during the run; run the tests again' },
      ],
    });
    const record = CallRecordSchema.parse(await (await api(second.url, 'GET', `/v2/calls/${callId}`)).json());
    expect(record).toMatchObject({ call_type: 'api', call_status: 'error', disconnection_reason: 'error_service' });
  }, 90_000);
});
