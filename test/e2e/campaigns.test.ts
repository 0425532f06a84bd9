// Campaigns end to end on real sockets: the service with simulated phones, polled over HTTP
// as a client would; and a service process killed with SIGKILL mid-campaign, then restarted.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CallRecordSchema } from '../../src/records/record.ts';
import { CampaignResponse } from '../../src/http/campaign-schemas.ts';
import { ListCallsV2Response } from '../../src/http/schemas.ts';
import { startTestService } from '../helpers/service.ts';

type Campaign = ReturnType<typeof CampaignResponse.parse>;

/** Polls the campaign until it finishes; checks on every read that the counters only grow and the slots hold. */
async function watch(
  read: () => Promise<Campaign>,
  timeoutMs: number,
): Promise<{ final: Campaign; peak: number; statuses: string[] }> {
  const statuses: string[] = [];
  let peak = 0;
  let last: Campaign | undefined;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const now = await read();
    peak = Math.max(peak, now.active_concurrency);
    if (statuses.at(-1) !== now.status) statuses.push(now.status);
    expect(now.active_concurrency).toBeLessThanOrEqual(now.concurrency);
    expect(now.completed_calls + now.failed_calls + now.active_concurrency).toBeLessThanOrEqual(now.total_calls);
    if (last) {
      expect(now.completed_calls).toBeGreaterThanOrEqual(last.completed_calls);
      expect(now.failed_calls).toBeGreaterThanOrEqual(last.failed_calls);
    }
    last = now;
    if (now.finished_at !== null && now.active_concurrency === 0) return { final: now, peak, statuses };
    if (Date.now() > deadline) throw new Error(`campaign not finished in ${timeoutMs} ms: ${JSON.stringify(now)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const SIM = [
  '+15550001=no_answer',
  '+15550002=fail',
  '+15550003=busy',
  '+15550004=voicemail',
  '+15550005=answer:short-hello',
].join(',');

describe('a campaign against simulated phones', () => {
  it('runs 30 tasks at concurrency 4: answered calls complete, the rest fail, every counter adds up, pending → ongoing → success, never more than 4 calls at once', async () => {
    const t = await startTestService({
      SIM_NUMBERS: SIM,
      RING_TIMEOUT_MS: '150',
      SIM_ANSWER_DELAY_MS: '20',
      SCHEDULER_POLL_MS: '100',
    });
    try {
      // The demo agent (embedded speech, the demo model over HTTP), with carrier voicemail detection.
      const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown>;
      const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
      expect(
        (await t.request('POST', '/v2/agents', { body: { ...config, agent_id: 'vm', voicemail_detection: true } }))
          .status,
      ).toBe(201);
      const numbers = ['+15550001', '+15550002', '+15550003', '+15550004', '+15550005'];
      // Eight ringing phones first, so all four slots are busy at once for a while.
      const tasks = Array.from({ length: 30 }, (_, i) => ({
        call_to: i < 8 ? numbers[0]! : numbers[i % 5]!,
        metadata: { i },
        dynamic_variables: { n: String(i) },
      }));
      const answering = tasks.filter((task) => task.call_to === '+15550005').length;
      const started = performance.now();
      const res = await t.request('POST', '/v2/campaigns', {
        body: { name: 'Thirty', call_from: '+14155550100', agent_id: 'vm', tasks, concurrency: 4 },
      });
      const created = CampaignResponse.parse(res.body);
      expect(created).toMatchObject({ status: 'pending', total_calls: 30, active_concurrency: 0 });
      const { final, peak, statuses } = await watch(
        async () => CampaignResponse.parse((await t.request('GET', `/v2/campaigns/${created.id}`)).body),
        50_000,
      );
      const took = performance.now() - started;
      console.log(
        `30-task campaign at concurrency 4: ${Math.round(took)} ms, peak active_concurrency ${peak}, ${answering} answered`,
      );
      expect(statuses[0]).toMatch(/pending|ongoing/);
      expect(statuses.slice(-2)).toEqual(['ongoing', 'success']);
      expect(peak).toBe(4);
      expect(final).toMatchObject({
        status: 'success',
        completed_calls: answering,
        failed_calls: 30 - answering,
        active_concurrency: 0,
      });

      const list = ListCallsV2Response.parse(
        (
          await t.request('POST', '/v2/calls/list', {
            body: { filter_criteria: { campaign_id: [created.id] }, limit: 100 },
          })
        ).body,
      );
      expect(list.total_count).toBe(30);
      const outcomes = new Map<string, string>();
      for (const call of list.calls.map((c) => CallRecordSchema.parse(c))) {
        outcomes.set(call.call_to!, `${call.call_status}/${call.disconnection_reason}`);
        expect(call.dynamic_variables).toEqual({ n: String((call.metadata as { i: number }).i) });
      }
      expect(Object.fromEntries(outcomes)).toEqual({
        '+15550001': 'not_connected/dial_no_answer',
        '+15550002': 'not_connected/dial_failed',
        '+15550003': 'not_connected/dial_failed',
        '+15550004': 'not_connected/voicemail_reached',
        '+15550005': 'ended/user_hangup',
      });
      expect(new Set(list.calls.map((c) => (c.metadata as { i: number }).i)).size).toBe(30);
    } finally {
      await t.stop();
    }
  }, 60_000);
});

describe("a campaign at the organization's limit", () => {
  it('waits instead of failing its tasks: never more calls than the limit, every task completes once slots free up', async () => {
    const t = await startTestService({
      SIM_NUMBERS: '+15550005=answer:short-hello',
      SIM_ANSWER_DELAY_MS: '20',
      SCHEDULER_POLL_MS: '100',
      ORG_LIMITS: JSON.stringify({ acme: { max_concurrent_calls: 2 } }),
    });
    try {
      const tasks = Array.from({ length: 4 }, (_, i) => ({ call_to: '+15550005', metadata: { i } }));
      const res = await t.request('POST', '/v2/campaigns', {
        body: { name: 'Limited', call_from: '+14155550100', agent_id: 'demo', tasks, concurrency: 4 },
      });
      const created = CampaignResponse.parse(res.body);
      const { final, peak } = await watch(
        async () => CampaignResponse.parse((await t.request('GET', `/v2/campaigns/${created.id}`)).body),
        30_000,
      );
      expect(peak).toBe(2);
      expect(final).toMatchObject({ status: 'success', completed_calls: 4, failed_calls: 0, active_concurrency: 0 });
      const list = ListCallsV2Response.parse(
        (
          await t.request('POST', '/v2/calls/list', {
            body: { filter_criteria: { campaign_id: [created.id] }, limit: 100 },
          })
        ).body,
      );
      expect(list.calls.map((c) => `${c.call_status}/${c.disconnection_reason}`)).toEqual(
        Array(4).fill('ended/user_hangup'),
      );
    } finally {
      await t.stop();
    }
  }, 60_000);
});

const root = join(import.meta.dirname, '..', '..');
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

const KEY = 'acme:kill-test-key-0123456789-0123456789-0123';

function startProcess(dataDir: string, env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env: {
      ...(process.env as Record<string, string>),
      DATA_DIR: dataDir,
      PORT: '0',
      API_KEYS: KEY,
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line:\n${out}`)), 20_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const ready = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"voice-call runtime ready"/.exec(out);
      if (ready) {
        clearTimeout(timer);
        resolve({ child, url: ready[1]! });
      }
    });
    child.on('exit', (code) => reject(new Error(`exited ${code}:\n${out}`)));
  });
}

async function api(url: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: 'Bearer kill-test-key-0123456789-0123456789-0123',
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return res.json();
}

describe('kill -9 mid-campaign', () => {
  it('after a restart no task is lost or dialed twice: the calls under way end with error_service and the campaign goes on', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-kill-'));
    const sim = { SIM_NUMBERS: '+15550001=no_answer', SCHEDULER_LEASE_MS: '1000', SCHEDULER_POLL_MS: '100' };
    const first = await startProcess(dataDir, { ...sim, RING_TIMEOUT_MS: '60000' });
    const tasks = Array.from({ length: 10 }, (_, i) => ({ call_to: '+15550001', metadata: { i } }));
    const created = CampaignResponse.parse(
      await api(first.url, 'POST', '/v2/campaigns', {
        name: 'Kill',
        call_from: '+14155550100',
        agent_id: 'demo',
        tasks,
        concurrency: 4,
      }),
    );
    for (;;) {
      const now = CampaignResponse.parse(await api(first.url, 'GET', `/v2/campaigns/${created.id}`));
      if (now.active_concurrency === 4) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const exited = new Promise((resolve) => first.child.once('exit', resolve));
    first.child.kill('SIGKILL');
    await exited;

    const second = await startProcess(dataDir, { ...sim, RING_TIMEOUT_MS: '150' });
    const { final } = await watch(
      async () => CampaignResponse.parse(await api(second.url, 'GET', `/v2/campaigns/${created.id}`)),
      20_000,
    );
    expect(final).toMatchObject({
      status: 'fail',
      total_calls: 10,
      failed_calls: 10,
      completed_calls: 0,
      active_concurrency: 0,
    });
    const list = ListCallsV2Response.parse(
      await api(second.url, 'POST', '/v2/calls/list', { filter_criteria: { campaign_id: [created.id] }, limit: 100 }),
    );
    expect(list.total_count).toBe(10);
    const byTask = list.calls.map((c) => (c.metadata as { i: number }).i).sort((a, b) => a - b);
    expect(byTask).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const reasons = list.calls
      .map((c) => `${(c.metadata as { i: number }).i}:${c.call_status}/${c.disconnection_reason}`)
      .sort();
    expect(reasons.filter((r) => r.endsWith('error/error_service'))).toEqual([
      '0:error/error_service',
      '1:error/error_service',
      '2:error/error_service',
      '3:error/error_service',
    ]);
    expect(reasons.filter((r) => r.endsWith('not_connected/dial_no_answer'))).toHaveLength(6);
  }, 60_000);
});
