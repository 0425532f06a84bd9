// Runs a test run: each test is a real call of type `api` through the whole pipeline — the
// caller is a simulated phone on this service's own Twilio media endpoint (so VAD, recognition,
// the model, tools, speech and pacing all run as for a customer's call) — then its record is
// checked against what the test expects. Tests run `concurrency` at a time; results are stored
// as each test ends, so a run can be watched while it goes.
import type { Logger } from 'pino';
import { CredentialUnavailableError, withCredentials, type CredentialLookup } from '../agents/credentials.ts';
import type { AgentVersion, LlmConfig } from '../agents/schema.ts';
import type { CallRegistry } from '../call/registry.ts';
import type { CallEvents } from '../records/events.ts';
import { llmMetadataOf, type CallRecord } from '../records/record.ts';
import type { CallRepository } from '../records/repository.ts';
import type { CallService } from '../records/service.ts';
import { liveAgentWords, SimCallee, type SimCalleeResult } from '../carriers/sim/callee.ts';
import type { SimStep } from '../carriers/sim/script.ts';
import { TwilioStreamCaller } from '../carriers/sim/twilio-stream.ts';
import type { Clock } from '../clock.ts';
import type { LlmClientOptions } from '../llm/client.ts';
import type { SpeechEngineProvider } from '../speech/types.ts';
import { replaySteps, scriptSteps, speakWith, type SpeakText } from './callers.ts';
import { compareWithOriginal } from './diff.ts';
import { checkExpectations, judgeCall, type Judge } from './expectations.ts';
import { runPersonaCaller } from './persona.ts';
import type { AgentTestRepository } from './repository.ts';
import type { AgentTest, TestResult, TestRun } from './schema.ts';
import { finishedRun } from './service.ts';

/** After the caller hangs up, how long the call may take to be finalized before the test is an error. */
const END_TIMEOUT_MS = 30_000;
/** A replayed caller the agent hung up on stays this long after its last turn for the agent to do so again. */
const REPLAY_STAY_MS = 15_000;

export interface TestRunnerDeps {
  calls: CallService;
  callRepo: CallRepository;
  events: CallEvents;
  registry: CallRegistry;
  repo: AgentTestRepository;
  speech: SpeechEngineProvider;
  /** ws:// address of this service's Twilio media endpoint. */
  mediaUrl: () => string;
  recordingPath: (callId: string) => string;
  /** Asks a model for a verdict (expect.judge). */
  judge: Judge;
  /** For a simulated caller's model requests. */
  llmClient: () => LlmClientOptions;
  /** The organization's provider credentials by name: the agent's model as a simulated caller or judge uses them. */
  credentials?: CredentialLookup | undefined;
  clock: Clock;
  random: () => number;
  log: Logger;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export class TestRunner {
  private readonly runs = new Set<Promise<void>>();
  private readonly lines = new Set<TwilioStreamCaller>();
  /** Test calls under way, each waiting for its record to be finalized. */
  private readonly awaitingEnd = new Map<string, (record: CallRecord) => void>();
  private closing = false;

  constructor(private readonly d: TestRunnerDeps) {
    d.events.on('ended', ({ record }) => this.awaitingEnd.get(record.call_id)?.(record));
  }

  /** Runs `tests` of `run` in the background; the stored run is updated as each ends. */
  start(orgId: string, run: TestRun, tests: readonly AgentTest[], version: AgentVersion): void {
    const work = this.execute(orgId, run, tests, version)
      .catch((error: unknown) => this.d.log.error({ err: error, run_id: run.run_id }, 'agent test run failed'))
      .finally(() => this.runs.delete(work));
    this.runs.add(work);
  }

  /** Hangs up every test call under way and waits for the runs to record why they stopped. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.allSettled([...this.lines].map((line) => line.hangUp()));
    await Promise.allSettled([...this.runs]);
  }

  private async execute(
    orgId: string,
    run: TestRun,
    tests: readonly AgentTest[],
    version: AgentVersion,
  ): Promise<void> {
    const queue = [...tests];
    const tts = this.d.speech.tts({ engine: 'flite', voice_id: 'rms', speed: 1 });
    const speak = speakWith(tts.engine);
    try {
      const worker = async () => {
        for (let test = queue.shift(); test; test = queue.shift()) {
          const current = test;
          await this.store(orgId, run.run_id, current.test_id, (r) => ({ ...r, status: 'running' }));
          const result = await this.runTest(orgId, run, current, version, speak).catch(
            (error: unknown): Partial<TestResult> => ({
              status: 'error',
              error: `the test could not run: ${(error as Error).message}`,
            }),
          );
          await this.store(orgId, run.run_id, current.test_id, (r) => ({ ...r, ...result }));
        }
      };
      await Promise.all(Array.from({ length: Math.min(run.concurrency, tests.length) }, worker));
    } finally {
      tts.release();
    }
  }

  private async store(
    orgId: string,
    runId: string,
    testId: string,
    change: (result: TestResult) => TestResult,
  ): Promise<void> {
    await this.d.repo.updateRun(orgId, runId, (run) =>
      finishedRun(
        { ...run, results: run.results.map((r) => (r.test_id === testId ? change(r) : r)) },
        this.d.clock.now(),
      ),
    );
  }

  private async runTest(
    orgId: string,
    run: TestRun,
    test: AgentTest,
    version: AgentVersion,
    speak: SpeakText,
  ): Promise<Partial<TestResult>> {
    if (this.closing) return { status: 'error', error: 'the service shut down before the test ran' };
    const { caller } = test;
    const original = 'replay' in caller ? await this.d.callRepo.get(orgId, caller.replay.call_id) : undefined;
    if ('replay' in caller && !original)
      return { status: 'error', error: `the call to replay, ${caller.replay.call_id}, no longer exists` };
    let steps: SimStep[] = [];
    if ('script' in caller)
      steps = await scriptSteps(caller.script, {
        speak,
        voice: caller.voice,
        agentGreets: version.config.begin_message.trim() !== '',
      });
    else if (original) steps = await replaySteps(original, this.d.recordingPath(original.call_id));

    const { record, streamSecret } = await this.d.calls.register(orgId, version, {
      call_type: 'api',
      call_from: null,
      call_to: null,
      metadata: { agent_test_id: test.test_id, agent_test_run_id: run.run_id },
      dynamic_variables: test.dynamic_variables,
    });
    const callId = record.call_id;
    // Shown at once: whoever watches the run can follow (or listen to) the call while it goes.
    await this.store(orgId, run.run_id, test.test_id, (r) => ({ ...r, call_id: callId }));
    const ended = new Promise<CallRecord>((resolve) => this.awaitingEnd.set(callId, resolve));
    try {
      return await this.callAndCheck(orgId, run, test, version, speak, {
        record,
        streamSecret,
        ended,
        steps,
        original,
      });
    } finally {
      this.awaitingEnd.delete(callId);
    }
  }

  /** Calls the agent as the test's caller, then checks the call's record once it is final. */
  private async callAndCheck(
    orgId: string,
    run: TestRun,
    test: AgentTest,
    version: AgentVersion,
    speak: SpeakText,
    call: {
      record: CallRecord;
      streamSecret: string;
      ended: Promise<CallRecord>;
      steps: SimStep[];
      original: CallRecord | undefined;
    },
  ): Promise<Partial<TestResult>> {
    const { caller } = test;
    const { record, streamSecret, ended, steps, original } = call;
    const callId = record.call_id;
    const agentLlm = await this.agentLlm(orgId, version);
    const line = new TwilioStreamCaller({
      url: this.d.mediaUrl(),
      customParameters: { call_id: callId, secret: streamSecret },
      history: false,
    });
    this.lines.add(line);
    let outcome: SimCalleeResult;
    try {
      try {
        await line.connect();
      } catch (error) {
        await this.d.calls.endUnconnected(
          orgId,
          callId,
          'error',
          'error_service',
          'The test caller could not open the media stream.',
        );
        return {
          status: 'error',
          call_id: callId,
          error: `the test caller could not open the media stream: ${(error as Error).message}`,
        };
      }
      const callee = new SimCallee({
        caller: line,
        script: { name: `${test.name} (${test.test_id})`, steps, maxMs: 0 },
        random: this.d.random,
        agentWords: liveAgentWords(() => this.d.registry, callId, line),
        log: this.d.log.child({ call_id: callId, test_id: test.test_id, run_id: run.run_id }),
      });
      if ('persona' in caller) {
        outcome = await runPersonaCaller(callee, {
          persona: caller.persona,
          goal: caller.goal,
          maxTurns: caller.max_turns,
          llm: caller.caller_llm ?? agentLlm,
          voice: caller.voice,
          speak,
          metadata: llmMetadataOf(record, version.version),
          client: this.d.llmClient(),
        });
      } else outcome = await callee.run();
      // After its last step a caller stays on the line for the agent to finish and hang up (a persona has already heard
      // it out).
      const stayMs = 'script' in caller ? caller.after_last_step_ms : 'replay' in caller ? REPLAY_STAY_MS : 0;
      if (outcome.ok && steps.at(-1)?.kind !== 'hangup' && !callee.line.closed)
        await Promise.race([callee.line.waitForClose(), sleep(stayMs)]);
      await callee.line.hangUp();
    } finally {
      this.lines.delete(line);
      await line.hangUp();
    }
    const final = await Promise.race([ended, sleep(END_TIMEOUT_MS).then(() => undefined)]);
    if (!final)
      return {
        status: 'error',
        call_id: callId,
        error: `the call was not finalized within ${END_TIMEOUT_MS / 1000} s of the caller hanging up`,
      };
    return this.resultOf(test, final, outcome, original, agentLlm);
  }

  /**
   * The agent's model settings with the credential it names resolved (in memory only); as stored when the credential
   * is gone, the call itself then ending with flow_error.
   */
  private async agentLlm(orgId: string, version: AgentVersion): Promise<LlmConfig> {
    try {
      return (await withCredentials(orgId, version.config, this.d.credentials ?? (() => Promise.resolve(undefined))))
        .llm;
    } catch (error) {
      if (error instanceof CredentialUnavailableError) return version.config.llm;
      throw error;
    }
  }

  private async resultOf(
    test: AgentTest,
    record: CallRecord,
    outcome: SimCalleeResult,
    original: CallRecord | undefined,
    agentLlm: LlmConfig,
  ): Promise<Partial<TestResult>> {
    const base: Partial<TestResult> = {
      call_id: record.call_id,
      transcript_with_tool_calls: record.transcript_with_tool_calls,
      disconnection_reason: record.disconnection_reason,
      latency_e2e_ms: record.latency?.e2e ? { p50: record.latency.e2e.p50, p95: record.latency.e2e.p95 } : null,
      duration_ms: record.duration_ms,
      original: original
        ? compareWithOriginal(original.call_id, original.transcript ?? [], record.transcript_with_tool_calls)
        : null,
    };
    if (this.closing) return { ...base, status: 'error', error: 'the service shut down during the test' };
    if (record.call_status !== 'ended')
      return {
        ...base,
        status: 'error',
        error: `the call did not connect: ${record.disconnection_reason ?? record.call_status}${record.disconnection_message ? ` (${record.disconnection_message})` : ''}`,
      };
    const assertions = checkExpectations(test.expect, record);
    if (test.expect.judge) assertions.push(await judgeCall(this.d.judge, test.expect.judge, record, agentLlm));
    // A caller that could not go on (the agent never answered its turn) fails the test as a finding, not an error of
    // the runner.
    if (!outcome.ok)
      assertions.unshift({ assertion: 'caller', passed: false, details: `step ${outcome.step}: ${outcome.reason}` });
    return { ...base, status: assertions.every((a) => a.passed) ? 'passed' : 'failed', assertions, error: null };
  }
}
