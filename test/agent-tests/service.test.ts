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
import { registeredRecord } from '../../src/calls/record.ts';
import { ApiError } from '../../src/errors.ts';
import { openStore, type Store } from '../../src/store/store.ts';

let dir: string;
let store: Store;
let tests: AgentTestService;
let agents: AgentService;
let started: TestRun[];
let now: number;
let ids: number;

const agentConfig = AgentConfigSchema.parse({ agent_name: 'Demo', llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' }, begin_message: 'Hi.' });
const script = { script: [{ say: 'Hello.' }] };
const input = (body: unknown) => AgentTestInputSchema.parse(body);

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agent-tests-'));
  now = 1_000;
  ids = 0;
  const random = (bytes: number) => String(++ids).padStart(bytes * 2, '0');
  store = openStore(dir, { random, now: () => now });
  agents = new AgentService(store.agents, { now: () => now });
  agents.create('acme', 'demo', agentConfig);
  started = [];
  const runner = { start: (_org: string, run: TestRun) => started.push(run) } as unknown as TestRunner;
  tests = new AgentTestService(store.agentTests, agents, store.calls, runner, { now: () => now }, random, pino({ level: 'silent' }));
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const codeOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (error) {
    return error instanceof ApiError ? `${error.code}: ${error.details}` : String(error);
  }
  return 'no error';
};

describe('agent test cases', () => {
  it("are kept per agent and organization in the order they were added; a patch replaces only the fields given", () => {
    const first = tests.create('acme', 'demo', input({ name: 'one', caller: script }));
    now = 2_000;
    tests.create('acme', 'demo', input({ name: 'two', caller: script }));
    expect(tests.list('acme', 'demo').map((t) => t.name)).toEqual(['one', 'two']);
    expect(codeOf(() => tests.get('globex', first.test_id))).toBe(`NOT_FOUND: agent test "${first.test_id}" does not exist`);
    const patched = tests.patch('acme', first.test_id, { expect: { disconnection_reason: 'agent_hangup' } });
    expect(patched).toMatchObject({ name: 'one', caller: script, expect: { disconnection_reason: 'agent_hangup' }, created_at: 1_000, updated_at: 2_000 });
    tests.delete('acme', first.test_id);
    expect(codeOf(() => tests.delete('acme', first.test_id))).toMatch(/^NOT_FOUND/);
  });

  it('refuses a test of an agent that does not exist, and a replay of a call that is not ended, recorded and spoken to', () => {
    expect(codeOf(() => tests.create('acme', 'nobody', input({ name: 'x', caller: script })))).toMatch(/^NOT_FOUND: agent "nobody"/);
    const record = registeredRecord({ call_id: 'call_live', agent_id: 'demo', agent_version: 1, call_type: 'web', call_from: null, call_to: null });
    store.calls.insert('acme', record, now);
    const replay = input({ name: 'r', caller: { replay: { call_id: 'call_live' } } });
    expect(codeOf(() => tests.create('acme', 'demo', replay))).toBe('BAD_REQUEST: body.caller.replay.call_id: "call_live" has not ended (registered)');
    store.calls.update('acme', 'call_live', (r) => ({ ...r, call_status: 'ended', recording_url: 'http://x/rec', transcript: [{ role: 'agent', content: 'Hi.', start_at: 0, end_at: 1 }] }));
    expect(codeOf(() => tests.create('acme', 'demo', replay))).toBe('BAD_REQUEST: body.caller.replay.call_id: "call_live" has no caller turns to replay');
    expect(codeOf(() => tests.create('globex', 'demo', replay))).toMatch(/^NOT_FOUND/);
  });

  it("gives the agents file's tests to an agent that has none, once: a restart does not bring back one deleted", () => {
    const shipped = [{ name: 'shipped', caller: script }];
    tests.loadFromFile('acme', 'demo', shipped);
    tests.loadFromFile('acme', 'demo', shipped);
    const [only] = tests.list('acme', 'demo');
    expect(only).toMatchObject({ name: 'shipped', caller: { script: [{ say: 'Hello.' }], voice: 'rms' } });
    tests.create('acme', 'demo', input({ name: 'mine', caller: script }));
    tests.delete('acme', only!.test_id);
    tests.loadFromFile('acme', 'demo', shipped);
    expect(tests.list('acme', 'demo').map((t) => t.name)).toEqual(['mine']);
    expect(() => tests.loadFromFile('acme', 'demo', [{ name: 'bad' }])).toThrow(AgentsFileError);
  });
});

describe('agent test runs', () => {
  it('start with every test pending on the resolved version, or only those named; a test the agent lacks is refused', () => {
    expect(codeOf(() => tests.startRun('acme', 'demo', { agentVersion: 'production', concurrency: 2 }))).toMatch(/^BAD_REQUEST: agent "demo" has no tests to run/);
    const a = tests.create('acme', 'demo', input({ name: 'a', caller: script }));
    const b = tests.create('acme', 'demo', input({ name: 'b', caller: script }));
    const run = tests.startRun('acme', 'demo', { agentVersion: 'latest', testIds: [b.test_id], concurrency: 2 });
    expect(run).toMatchObject({ agent_version: 1, status: 'running', results: [{ test_id: b.test_id, status: 'pending' }], summary: { total: 1 } });
    expect(started).toEqual([run]);
    expect(tests.getRun('acme', run.run_id)).toEqual(run);
    expect(codeOf(() => tests.startRun('acme', 'demo', { agentVersion: 'latest', testIds: [a.test_id, 'test_x'], concurrency: 1 }))).toBe(
      'BAD_REQUEST: body.test_ids: "test_x" is not a test of agent "demo"',
    );
  });

  it('left running by a previous process end as errors, each unfinished test saying why', () => {
    tests.create('acme', 'demo', input({ name: 'a', caller: script }));
    const run = tests.startRun('acme', 'demo', { agentVersion: 'latest', concurrency: 1 });
    now = 9_000;
    tests.recover();
    expect(tests.getRun('acme', run.run_id)).toMatchObject({
      status: 'error',
      ended_at: 9_000,
      results: [{ status: 'error', error: 'the service restarted during the run; run the tests again' }],
      summary: { errored: 1, wall_ms: 8_000 },
    });
  });

  it('are compared by default with the last finished run of an earlier version, and a diff without one says how to name one', () => {
    tests.create('acme', 'demo', input({ name: 'a', caller: script }));
    const first = tests.startRun('acme', 'demo', { agentVersion: 'latest', concurrency: 1 });
    expect(codeOf(() => tests.diff('acme', first.run_id, undefined))).toBe('NOT_FOUND: no finished run of agent demo on a version before 1 to compare with; name one with ?against=');
    expect(tests.diff('acme', first.run_id, first.run_id).summary).toEqual({ newly_failing: 0, newly_passing: 0, changed: 0, unchanged: 1 });

    // Two finished runs of version 1 and one still running: a run of version 2 is compared with the later finished one.
    const finish = (runId: string) => store.agentTests.updateRun('acme', runId, (r) => finishedRun({ ...r, results: r.results.map((x) => ({ ...x, status: 'passed' as const })) }, now));
    finish(first.run_id);
    now = 2_000;
    const second = tests.startRun('acme', 'demo', { agentVersion: 'latest', concurrency: 1 });
    finish(second.run_id);
    now = 3_000;
    tests.startRun('acme', 'demo', { agentVersion: 'latest', concurrency: 1 });
    agents.patch('acme', 'demo', { begin_message: 'Hello.' });
    const next = tests.startRun('acme', 'demo', { agentVersion: 'latest', concurrency: 1 });
    expect(tests.diff('acme', next.run_id, undefined)).toMatchObject({ against: second.run_id, agent_version: 2, against_agent_version: 1 });
  });
});
