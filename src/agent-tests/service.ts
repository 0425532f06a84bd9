// Agent tests: kept per agent, run against an agent version (by the runner, in the background),
// and runs compared with each other.
import type { Logger } from 'pino';
import { z } from 'zod';
import { AgentsFileError } from '../agents/file.ts';
import type { AgentService, AgentVersionSpec } from '../agents/service.ts';
import type { CallRepository } from '../records/repository.ts';
import { newId, type Clock, type RandomHex } from '../clock.ts';
import { ApiError, notFound } from '../errors.ts';
import { diffRuns, type RunDiff } from './diff.ts';
import type { AgentTestRepository } from './repository.ts';
import type { TestRunner } from './runner.ts';
import { refuseUrlFields } from '../schema-fields.ts';
import {
  AGENT_TEST_LIMITS,
  AGENT_TEST_SECRETS,
  AGENT_TEST_URL_FIELDS,
  AgentTestInputSchema,
  type AgentTest,
  type AgentTestInput,
  type AgentTestPatch,
  type TestCaller,
  type TestResult,
  type TestRun,
} from './schema.ts';

export interface RunRequest {
  agentVersion: AgentVersionSpec;
  testIds?: string[] | undefined;
  concurrency: number;
}

export class AgentTestService {
  constructor(
    private readonly repo: AgentTestRepository,
    private readonly agents: AgentService,
    private readonly calls: CallRepository,
    private readonly runner: TestRunner,
    private readonly clock: Clock,
    private readonly random: RandomHex,
    private readonly log: Logger,
    /** This node: a run belongs to the node running its calls. */
    private readonly nodeId: string | null = null,
    /** Why the egress policy refuses a URL outright (a literal internal address), or null. */
    private readonly endpointRefusal: (url: string) => string | null = () => null,
  ) {}

  async create(orgId: string, agentId: string, input: AgentTestInput): Promise<AgentTest> {
    await this.agents.resolve(orgId, agentId, 'latest');
    refuseUrlFields(AGENT_TEST_URL_FIELDS, input, this.endpointRefusal);
    await this.checkCaller(orgId, input.caller);
    const now = this.clock.now();
    const test: AgentTest = {
      test_id: newId('test', this.random),
      agent_id: agentId,
      ...input,
      created_at: now,
      updated_at: now,
    };
    await this.repo.insertTest(orgId, test);
    return AGENT_TEST_SECRETS.hide(test);
  }

  /** The test as responses show it: its API keys left out. */
  async get(orgId: string, testId: string): Promise<AgentTest> {
    return AGENT_TEST_SECRETS.hide(await this.stored(orgId, testId));
  }

  async patch(orgId: string, testId: string, changes: AgentTestPatch): Promise<AgentTest> {
    const current = await this.stored(orgId, testId);
    refuseUrlFields(AGENT_TEST_URL_FIELDS, changes, this.endpointRefusal);
    if (changes.caller) await this.checkCaller(orgId, changes.caller);
    const defined = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined));
    const next: AgentTest = { ...current, ...defined, updated_at: this.clock.now() };
    await this.repo.updateTest(orgId, next);
    return AGENT_TEST_SECRETS.hide(next);
  }

  private async stored(orgId: string, testId: string): Promise<AgentTest> {
    const test = await this.repo.getTest(orgId, testId);
    if (!test) throw notFound('agent test', testId);
    return test;
  }

  async delete(orgId: string, testId: string): Promise<void> {
    if (!(await this.repo.deleteTest(orgId, testId))) throw notFound('agent test', testId);
  }

  async list(orgId: string, agentId: string): Promise<AgentTest[]> {
    await this.agents.resolve(orgId, agentId, 'latest');
    return (await this.repo.listTests(orgId, agentId)).map((test) => AGENT_TEST_SECRETS.hide(test));
  }

  /**
   * Tests that ship with an agent (the agents file) are given to an agent that has none: a restart
   * neither duplicates them nor brings back one that was changed or deleted over the API.
   */
  async loadFromFile(orgId: string, agentId: string, entries: readonly unknown[]): Promise<void> {
    const inputs = entries.map((entry, index) => {
      const parsed = AgentTestInputSchema.safeParse(entry);
      if (!parsed.success)
        throw new AgentsFileError(
          `agent ${agentId}: tests[${index}]: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
        );
      return parsed.data;
    });
    if ((await this.repo.listTests(orgId, agentId)).length > 0) return;
    for (const input of inputs) await this.create(orgId, agentId, input);
  }

  /** Starts a run of the agent's tests (or those named) on a version; it goes on in the background. */
  async startRun(orgId: string, agentId: string, request: RunRequest): Promise<TestRun> {
    const version = await this.agents.resolve(orgId, agentId, request.agentVersion);
    const all = await this.repo.listTests(orgId, agentId);
    let tests = all;
    if (request.testIds) {
      const byId = new Map(all.map((t) => [t.test_id, t]));
      const unknown = request.testIds.filter((id) => !byId.has(id));
      if (unknown.length > 0)
        throw new ApiError(
          'BAD_REQUEST',
          `body.test_ids: ${unknown.map((id) => JSON.stringify(id)).join(', ')} ${unknown.length === 1 ? 'is not a test' : 'are not tests'} of agent ${JSON.stringify(agentId)}`,
        );
      tests = [...new Set(request.testIds)].map((id) => byId.get(id)!);
    }
    if (tests.length === 0)
      throw new ApiError(
        'BAD_REQUEST',
        `agent ${JSON.stringify(agentId)} has no tests to run; add some with POST /v2/agents/${agentId}/tests`,
      );
    if (tests.length > AGENT_TEST_LIMITS.testsPerRun)
      throw new ApiError(
        'BAD_REQUEST',
        `a run takes at most ${AGENT_TEST_LIMITS.testsPerRun} tests; name some with test_ids`,
      );
    const run: TestRun = {
      run_id: newId('run', this.random),
      agent_id: agentId,
      agent_version: version.version,
      status: 'running',
      concurrency: request.concurrency,
      created_at: this.clock.now(),
      ended_at: null,
      results: tests.map((t) => pendingResult(t)),
      summary: { total: tests.length, passed: 0, failed: 0, errored: 0, wall_ms: null, audio_ms: 0 },
    };
    await this.repo.insertRun(orgId, run, this.nodeId);
    this.runner.start(orgId, run, tests, version);
    return run;
  }

  async getRun(orgId: string, runId: string): Promise<TestRun> {
    const run = await this.repo.getRun(orgId, runId);
    if (!run) throw notFound('test run', runId);
    return run;
  }

  async listRuns(orgId: string, agentId: string, limit: number): Promise<TestRun[]> {
    await this.agents.resolve(orgId, agentId, 'latest');
    return this.repo.listRuns(orgId, agentId, limit);
  }

  /** The run against another, by default the last finished run of the agent's previous version. */
  async diff(orgId: string, runId: string, againstId: string | undefined): Promise<RunDiff> {
    const run = await this.getRun(orgId, runId);
    let against: TestRun | undefined;
    if (againstId !== undefined) {
      against = await this.getRun(orgId, againstId);
      if (against.agent_id !== run.agent_id)
        throw new ApiError(
          'BAD_REQUEST',
          `against: run ${againstId} is of agent ${against.agent_id}, not ${run.agent_id}`,
        );
    } else {
      against = await this.repo.lastFinishedRunBelow(orgId, run.agent_id, run.agent_version);
      if (!against)
        throw new ApiError(
          'NOT_FOUND',
          `no finished run of agent ${run.agent_id} on a version before ${run.agent_version} to compare with; name one with ?against=`,
        );
    }
    return diffRuns(run, against);
  }

  /**
   * Runs a dead node left running cannot go on (their calls ended with it): they end as errors
   * now, each unfinished test saying why, so nobody waits on them. At start this node's own runs
   * from before count as dead; a live peer's are left alone.
   */
  async recover(liveNodes: string[]): Promise<void> {
    for (const { orgId, run } of await this.repo.orphanedRuns(liveNodes)) {
      await this.repo.updateRun(orgId, run.run_id, (current) =>
        finishedRun(
          {
            ...current,
            results: current.results.map((r) =>
              r.status === 'pending' || r.status === 'running'
                ? { ...r, status: 'error', error: 'the service restarted during the run; run the tests again' }
                : r,
            ),
          },
          this.clock.now(),
        ),
      );
      this.log.warn(
        { run_id: run.run_id, org_id: orgId },
        'agent test run left unfinished by a restart: ended as an error',
      );
    }
  }

  /** A replayed call must be one of the organization's, ended, with its transcript and recording. */
  private async checkCaller(orgId: string, caller: TestCaller): Promise<void> {
    if (!('replay' in caller)) return;
    const { call_id } = caller.replay;
    const record = await this.calls.get(orgId, call_id);
    const problem = !record
      ? 'is not a call of this organization'
      : record.call_status !== 'ended'
        ? `has not ended (${record.call_status})`
        : record.opt_out_sensitive_data_storage || !record.recording_url
          ? 'has no recording to replay'
          : !(record.transcript ?? []).some((m) => m.role === 'user')
            ? 'has no caller turns to replay'
            : null;
    if (problem) throw new ApiError('BAD_REQUEST', `body.caller.replay.call_id: ${JSON.stringify(call_id)} ${problem}`);
  }
}

export function pendingResult(test: AgentTest): TestResult {
  return {
    test_id: test.test_id,
    name: test.name,
    status: 'pending',
    call_id: null,
    assertions: [],
    error: null,
    transcript_with_tool_calls: null,
    disconnection_reason: null,
    latency_e2e_ms: null,
    duration_ms: null,
    original: null,
  };
}

/** The run with its summary counted and, once no test is left, its status and end. */
export function finishedRun(run: TestRun, now: number): TestRun {
  const count = (status: TestResult['status']) => run.results.filter((r) => r.status === status).length;
  const done = run.results.every((r) => r.status !== 'pending' && r.status !== 'running');
  const summary = {
    total: run.results.length,
    passed: count('passed'),
    failed: count('failed'),
    errored: count('error'),
    wall_ms: done ? now - run.created_at : null,
    audio_ms: run.results.reduce((sum, r) => sum + (r.duration_ms ?? 0), 0),
  };
  if (!done) return { ...run, summary };
  const status = summary.errored > 0 ? 'error' : summary.failed > 0 ? 'failed' : 'passed';
  return { ...run, status, ended_at: now, summary };
}

export const RunRequestSchema = z.strictObject({
  agent_version: z
    .union([z.int().min(1), z.string().min(1).max(20)])
    .optional()
    .describe('"production" (default), "latest" or a version number'),
  test_ids: z
    .array(z.string().min(1).max(200))
    .min(1)
    .max(AGENT_TEST_LIMITS.testsPerRun)
    .optional()
    .describe("the agent's tests to run; all by default"),
  concurrency: z.int().min(1).max(AGENT_TEST_LIMITS.runConcurrency).default(2).describe('tests run at once'),
});
