import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestRunner } from '../../src/agent-tests/runner.ts';
import { AgentTestService, finishedRun } from '../../src/agent-tests/service.ts';
import { AgentTestInputSchema, type TestRun } from '../../src/agent-tests/schema.ts';
import { AgentsFileError } from '../../src/agents/file.ts';
import { AgentConfigSchema } from '../../src/agents/schema.ts';
import { AgentService } from '../../src/agents/service.ts';
import { registeredRecord } from '../../src/records/record.ts';
import { ApiError } from '../../src/errors.ts';
import { openStore, type Store } from '../../src/store/store.ts';

let dir: string;
let store: Store;
let tests: AgentTestService;
let agents: AgentService;
let started: TestRun[];
let now: number;
let ids: number;

const agentConfig = AgentConfigSchema.parse({
  agent_name: 'Demo',
  llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' },
  begin_message: 'Hi.',
});
const script = { script: [{ say: 'Hello.' }] };
const input = (body: unknown) => AgentTestInputSchema.parse(body);

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agent-tests-'));
  now = 1_000;
  ids = 0;
  const random = (bytes: number) => String(++ids).padStart(bytes * 2, '0');
  store = openStore(dir, { random, now: () => now });
  agents = new AgentService(store.agents, { now: () => now });
  await agents.create('acme', 'demo', agentConfig);
  started = [];
  const runner = { start: (_org: string, run: TestRun) => started.push(run) } as unknown as TestRunner;
  tests = new AgentTestService(
    store.agentTests,
    agents,
    store.calls,
    runner,
    { now: () => now },
    random,
    pino({ level: 'silent' }),
  );
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const codeOf = async (fn: () => unknown): Promise<string> => {
  try {
    await fn();
  } catch (error) {
    return error instanceof ApiError ? `${error.code}: ${error.details}` : String(error);
  }
  return 'no error';
};

describe('agent test cases', () => {
  it('are kept per agent and organization in the order they were added; a patch replaces only the fields given', async () => {
    const first = await tests.create('acme', 'demo', input({ name: 'one', caller: script }));
    now = 2_000;
    await tests.create('acme', 'demo', input({ name: 'two', caller: script }));
    expect((await tests.list('acme', 'demo')).map((t) => t.name)).toEqual(['one', 'two']);
    expect(await codeOf(() => tests.get('globex', first.test_id))).toBe(
      `NOT_FOUND: agent test "${first.test_id}" does not exist`,
    );
    const patched = await tests.patch('acme', first.test_id, { expect: { disconnection_reason: 'agent_hangup' } });
    expect(patched).toMatchObject({
      name: 'one',
      caller: script,
      expect: { disconnection_reason: 'agent_hangup' },
      created_at: 1_000,
      updated_at: 2_000,
    });
    await tests.delete('acme', first.test_id);
    expect(await codeOf(() => tests.delete('acme', first.test_id))).toMatch(/^NOT_FOUND/);
  });

  it('refuses a test of an agent that does not exist, and a replay of a call that is not ended, recorded and spoken to', async () => {
    expect(await codeOf(() => tests.create('acme', 'nobody', input({ name: 'x', caller: script })))).toMatch(
      /^NOT_FOUND: agent "nobody"/,
    );
    const record = registeredRecord({
      call_id: 'call_live',
      agent_id: 'demo',
      agent_version: 1,
      call_type: 'web',
      call_from: null,
      call_to: null,
    });
    await store.calls.insert('acme', record, now);
    const replay = input({ name: 'r', caller: { replay: { call_id: 'call_live' } } });
    expect(await codeOf(() => tests.create('acme', 'demo', replay))).toBe(
      'BAD_REQUEST: body.caller.replay.call_id: "call_live" has not ended (registered)',
    );
    await store.calls.update('acme', 'call_live', (r) => ({
      ...r,
      call_status: 'ended',
      recording_url: 'http://x/rec',
      transcript: [{ role: 'agent', content: 'Hi.', start_at: 0, end_at: 1 }],
    }));
    expect(await codeOf(() => tests.create('acme', 'demo', replay))).toBe(
      'BAD_REQUEST: body.caller.replay.call_id: "call_live" has no caller turns to replay',
    );
    expect(await codeOf(() => tests.create('globex', 'demo', replay))).toMatch(/^NOT_FOUND/);
  });

  it("gives the agents file's tests to an agent that has none, once: a restart does not bring back one deleted", async () => {
    const shipped = [{ name: 'shipped', caller: script }];
    await tests.loadFromFile('acme', 'demo', shipped);
    await tests.loadFromFile('acme', 'demo', shipped);
    const [only] = await tests.list('acme', 'demo');
    expect(only).toMatchObject({ name: 'shipped', caller: { script: [{ say: 'Hello.' }], voice: 'rms' } });
    await tests.create('acme', 'demo', input({ name: 'mine', caller: script }));
    await tests.delete('acme', only!.test_id);
    await tests.loadFromFile('acme', 'demo', shipped);
    expect((await tests.list('acme', 'demo')).map((t) => t.name)).toEqual(['mine']);
    await expect(tests.loadFromFile('acme', 'demo', [{ name: 'bad' }])).rejects.toThrow(AgentsFileError);
  });
});

describe('agent test runs', () => {
  it('start with every test pending on the resolved version, or only those named; a test the agent lacks is refused', async () => {
    expect(await codeOf(() => tests.startRun('acme', 'demo', { agentVersion: 'production', concurrency: 2 }))).toMatch(
      /^BAD_REQUEST: agent "demo" has no tests to run/,
    );
    const a = await tests.create('acme', 'demo', input({ name: 'a', caller: script }));
    const b = await tests.create('acme', 'demo', input({ name: 'b', caller: script }));
    const run = await tests.startRun('acme', 'demo', { agentVersion: 'latest', testIds: [b.test_id], concurrency: 2 });
    expect(run).toMatchObject({
      agent_version: 1,
      status: 'running',
      results: [{ test_id: b.test_id, status: 'pending' }],
      summary: { total: 1 },
    });
    expect(started).toEqual([run]);
    expect(await tests.getRun('acme', run.run_id)).toEqual(run);
    expect(
      await codeOf(() =>
        tests.startRun('acme', 'demo', { agentVersion: 'latest', testIds: [a.test_id, 'test_x'], concurrency: 1 }),
      ),
    ).toBe('BAD_REQUEST: body.test_ids: "test_x" is not a test of agent "demo"');
  });

  it("left running by a node that died (this one's previous run among them) end as errors, each unfinished test saying why; a live node's run goes on", async () => {
    await tests.create('acme', 'demo', input({ name: 'a', caller: script }));
    const run = await tests.startRun('acme', 'demo', { agentVersion: 'latest', concurrency: 1 });
    const peers = { ...run, run_id: 'run_of_live_peer' };
    await store.agentTests.insertRun('acme', peers, 'node-b');
    now = 9_000;
    // `tests` has no node id: its run counts as a dead node's. node-b's lease runs.
    await tests.recover(['node-b']);
    expect(await tests.getRun('acme', run.run_id)).toMatchObject({
      status: 'error',
      ended_at: 9_000,
      results: [{ status: 'error', error: 'the service restarted during the run; run the tests again' }],
      summary: { errored: 1, wall_ms: 8_000 },
    });
    expect(await tests.getRun('acme', peers.run_id)).toMatchObject({
      status: 'running',
      results: [{ status: 'pending' }],
    });
    // Once node-b is dead too, its run ends the same way.
    await tests.recover([]);
    expect(await tests.getRun('acme', peers.run_id)).toMatchObject({ status: 'error' });
  });

  it('are compared by default with the last finished run of an earlier version, and a diff without one says how to name one', async () => {
    await tests.create('acme', 'demo', input({ name: 'a', caller: script }));
    const first = await tests.startRun('acme', 'demo', { agentVersion: 'latest', concurrency: 1 });
    expect(await codeOf(() => tests.diff('acme', first.run_id, undefined))).toBe(
      'NOT_FOUND: no finished run of agent demo on a version before 1 to compare with; name one with ?against=',
    );
    expect((await tests.diff('acme', first.run_id, first.run_id)).summary).toEqual({
      newly_failing: 0,
      newly_passing: 0,
      changed: 0,
      unchanged: 1,
    });

    // Two finished runs of version 1 and one still running: a run of version 2 is compared with the later finished one.
    const finish = (runId: string) =>
      store.agentTests.updateRun('acme', runId, (r) =>
        finishedRun({ ...r, results: r.results.map((x) => ({ ...x, status: 'passed' as const })) }, now),
      );
    await finish(first.run_id);
    now = 2_000;
    const second = await tests.startRun('acme', 'demo', { agentVersion: 'latest', concurrency: 1 });
    await finish(second.run_id);
    now = 3_000;
    await tests.startRun('acme', 'demo', { agentVersion: 'latest', concurrency: 1 });
    await agents.patch('acme', 'demo', { begin_message: 'Hello.' });
    const next = await tests.startRun('acme', 'demo', { agentVersion: 'latest', concurrency: 1 });
    expect(await tests.diff('acme', next.run_id, undefined)).toMatchObject({
      against: second.run_id,
      agent_version: 2,
      against_agent_version: 1,
    });
  });
});
