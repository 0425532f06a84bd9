// Agent tests end to end, with the demo agent, the embedded engines and real sockets: the demo's
// shipped tests pass; a version without its booking tool fails them with assertions and a diff
// that name the missing call; a recorded simulated-phone call replayed against the same version
// says the same, turn by turn; a caller played by the demo model books and a model judge grades it;
// test calls stay out of the call list unless asked for.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunDiffSchema } from '../../src/agent-tests/diff.ts';
import { AgentTestSchema, TestRunSchema, type TestRun } from '../../src/agent-tests/schema.ts';
import type { CallRecord } from '../../src/records/record.ts';
import { callEnded, errorOf, startTestService, type TestService } from '../helpers/service.ts';

let t: TestService;
const BOOKING_CALLER = '+15550001';

/**
 * A stand-in judge model (the demo model plays the agent and the caller, not the judge): it passes a call whose agent
 * confirmed a booking.
 */
function startModels(): Promise<{ url: string; asked: string[]; close(): Promise<void> }> {
  const asked: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const { model, messages } = JSON.parse(body) as { model: string; messages: { role: string; content: string }[] };
      asked.push(messages[1]!.content);
      const content = /all set/i.test(messages[1]!.content)
        ? '{"pass": true, "reason": "The agent confirmed the booking."}'
        : '{"pass": false, "reason": "No booking."}';
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          id: 'x',
          object: 'chat.completion',
          created: 1,
          model,
          choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }],
        }),
      );
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        asked,
        close: () => new Promise<void>((done) => server.close(() => done())),
      }),
    ),
  );
}
let models: Awaited<ReturnType<typeof startModels>>;

/** A simulated phone's booking call, placed at the start so that it goes on beside the first run. */
let recordedCall: Promise<CallRecord>;

beforeAll(async () => {
  models = await startModels();
  t = await startTestService({ SIM_NUMBERS: `${BOOKING_CALLER}=answer:book-appointment`, SIM_ANSWER_DELAY_MS: '200' });
  const placed = await t.request('POST', '/v2/calls', {
    body: { call_from: '+14155550100', call_to: BOOKING_CALLER, agent_id: 'demo' },
  });
  expect(placed.status).toBe(201);
  recordedCall = callEnded(t, (placed.body as { call_id: string }).call_id);
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await models?.close();
});

async function runTests(body: Record<string, unknown>): Promise<TestRun> {
  const started = await t.request('POST', '/v2/agents/demo/test-runs', { body });
  expect(started.status, started.text).toBe(201);
  const run = TestRunSchema.parse(started.body);
  expect(run.status).toBe('running');
  const until = Date.now() + 240_000;
  while (Date.now() < until) {
    const current = TestRunSchema.parse((await t.request('GET', `/v2/test-runs/${run.run_id}`)).body);
    if (current.status !== 'running') return current;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`run ${run.run_id} did not finish`);
}

// Runs on version 1 that later tests check, started once the first run is done so that they go on
// beside the run of version 2 (calls are real time: one after another the file would take minutes more).
let replayRun: Promise<{ original: CallRecord; replay: TestRun }>;
let personaRun: Promise<TestRun>;

/** A caller played by the demo model (the agent's own, as no caller_llm is given), graded by the stand-in judge. */
async function personaTestRun(): Promise<TestRun> {
  const created = await t.request('POST', '/v2/agents/demo/tests', {
    body: {
      name: 'a caller who wants Monday',
      caller: {
        persona: 'John Smith, a patient of the clinic.',
        goal: 'Book an appointment for next Monday morning.',
        max_turns: 6,
      },
      expect: {
        tool_calls: [{ name: 'book_appointment', arguments: { name: 'John Smith' } }],
        judge: { criteria: 'The caller was booked.', judge_llm: { base_url: `${models.url}/v1`, model: 'judge' } },
      },
    },
  });
  expect(created.status, created.text).toBe(201);
  return runTests({ agent_version: 1, test_ids: [AgentTestSchema.parse(created.body).test_id] });
}

/** A test replaying the simulated phone's recorded call, run on the version it was made with. */
async function replayOfRecordedCall(): Promise<{ original: CallRecord; replay: TestRun }> {
  const original = await recordedCall;
  const created = await t.request('POST', '/v2/agents/demo/tests', {
    body: {
      name: 'replay of a booking',
      caller: { replay: { call_id: original.call_id } },
      expect: { tool_calls: [{ name: 'book_appointment' }] },
    },
  });
  expect(created.status, created.text).toBe(201);
  const replay = await runTests({ agent_version: 1, test_ids: [AgentTestSchema.parse(created.body).test_id] });
  return { original, replay };
}

/** Each failed assertion, with the conversation that failed it. */
const failures = (run: TestRun) =>
  run.results.flatMap((r) => {
    const failed = r.assertions.filter((a) => !a.passed).map((a) => `${r.name}: ${a.assertion}: ${a.details}`);
    if (r.error) failed.push(`${r.name}: ${r.error}`);
    const said = (r.transcript_with_tool_calls ?? []).map((i) =>
      'content' in i && 'role' in i && (i.role === 'agent' || i.role === 'user') ? `${i.role}: ${i.content}` : i.role,
    );
    return failed.length > 0 ? [...failed, `  ${said.join(' | ')}`] : [];
  });

describe('agent tests', () => {
  let firstRun: TestRun;

  it("the demo agent's shipped tests pass on the embedded engines, each a recorded api call kept out of the call list", async () => {
    const listed = await t.request('POST', '/v2/agents/demo/tests/list', { body: {} });
    const tests = AgentTestSchema.array().parse((listed.body as { tests: unknown }).tests);
    expect(tests.map((x) => x.name)).toEqual([
      'booking succeeds',
      'caller changes their mind',
      'caller asks something off-topic',
    ]);

    firstRun = await runTests({ agent_version: 'production', concurrency: 3 });
    expect(failures(firstRun)).toEqual([]);
    expect(firstRun).toMatchObject({
      status: 'passed',
      agent_version: 1,
      summary: { total: 3, passed: 3, failed: 0, errored: 0 },
    });
    const booking = firstRun.results[0]!;
    expect(
      booking.transcript_with_tool_calls!.some(
        (i) => i.role === 'tool_call_invocation' && i.name === 'book_appointment',
      ),
    ).toBe(true);
    expect(booking.latency_e2e_ms!.p50).toBeGreaterThan(0);
    console.log(
      `demo agent tests: wall ${firstRun.summary.wall_ms} ms for ${firstRun.summary.audio_ms} ms of calls (3 tests, concurrency 3)`,
    );

    const record = (await t.request('GET', `/v2/calls/${booking.call_id}`)).body as {
      call_type: string;
      metadata: Record<string, unknown>;
    };
    expect(record).toMatchObject({ call_type: 'api', metadata: { agent_test_run_id: firstRun.run_id } });
    const listedCalls = (await t.request('POST', '/v2/calls/list', { body: {} })).body as {
      calls: { call_id: string }[];
    };
    expect(listedCalls.calls.map((c) => c.call_id)).not.toContain(booking.call_id);
    const apiCalls = (await t.request('POST', '/v2/calls/list', { body: { filter_criteria: { call_type: ['api'] } } }))
      .body as { calls: { call_id: string }[] };
    expect(apiCalls.calls.map((c) => c.call_id)).toContain(booking.call_id);
    replayRun = replayOfRecordedCall();
    personaRun = personaTestRun();
    // Their failures are reported by the tests that await them, not as unhandled meanwhile.
    replayRun.catch(() => undefined);
    personaRun.catch(() => undefined);
  }, 300_000);

  it('a version without its booking tool fails the booking test naming the missing call, and the diff against the last version says so', async () => {
    const agent = (await t.request('GET', '/v2/agents/demo')).body as { tools: { name: string }[] };
    const patched = await t.request('PATCH', '/v2/agents/demo', {
      body: { tools: agent.tools.filter((tool) => tool.name !== 'book_appointment') },
    });
    expect(patched.status).toBe(200);
    const bookingTest = firstRun.results[0]!.test_id;
    const broken = await runTests({ agent_version: 2, test_ids: [bookingTest] });
    expect(broken).toMatchObject({ status: 'failed', agent_version: 2, summary: { total: 1, failed: 1 } });
    const failed = broken.results[0]!.assertions.filter((a) => !a.passed);
    expect(failed.map((a) => a.assertion)).toEqual(expect.arrayContaining(['tool_calls[0]', 'transcript_contains[0]']));
    expect(failed.find((a) => a.assertion === 'tool_calls[0]')!.details).toMatch(/^book_appointment was never called/);

    // Named: version 1's replay and persona runs (later tests) may have finished since, and the default takes the last.
    const diffed = await t.request('GET', `/v2/test-runs/${broken.run_id}/diff?against=${firstRun.run_id}`);
    expect(diffed.status, diffed.text).toBe(200);
    const diff = RunDiffSchema.parse(diffed.body);
    expect(diff).toMatchObject({ against: firstRun.run_id, against_agent_version: 1, summary: { newly_failing: 1 } });
    const booking = diff.tests.find((x) => x.test_id === bookingTest)!;
    expect(booking.status).toEqual({ before: 'passed', after: 'failed', changed: true });
    expect(booking.tool_calls.removed.map((c) => c.name)).toContain('book_appointment');
    expect(booking.turns.length).toBeGreaterThan(0);
    // Tests the broken run did not run are listed as not run there.
    expect(diff.tests.filter((x) => x.status.after === null)).toHaveLength(2);
  }, 300_000);

  it('a recorded simulated-phone call replayed against the same version says the same, turn by turn', async () => {
    const { original, replay } = await replayRun;
    expect(original.disconnection_reason).toBe('agent_hangup');
    expect(failures(replay)).toEqual([]);
    const comparison = replay.results[0]!.original!;
    expect(comparison.turns.filter((turn) => !turn.same)).toEqual([]);
    expect(comparison.total_turns).toBe(original.transcript!.length);
  }, 300_000);

  it("a simulated caller played by the agent's own model server (the demo's) books through the real pipeline, and a model judge grades the call", async () => {
    const run = await personaRun;
    expect(failures(run)).toEqual([]);
    const result = run.results[0]!;
    expect(result.assertions.find((a) => a.assertion === 'judge')).toEqual({
      assertion: 'judge',
      passed: true,
      details: 'The agent confirmed the booking.',
    });
    // The caller answered what the agent asked, turn by turn, and said goodbye when offered more.
    const said = (result.transcript_with_tool_calls ?? []).flatMap((i) =>
      i.role === 'user' ? [i.content.toLowerCase()] : [],
    );
    expect(said[0]).toMatch(/john smith/);
    expect(said.at(-1)).toMatch(/no,? thank you/);
    expect(result.disconnection_reason).toMatch(/^(agent|user)_hangup$/);
    expect(models.asked[0]).toContain('Criteria: The caller was booked.');
  }, 300_000);

  it('refuses a replay of a call that does not exist, and a run of tests the agent does not have', async () => {
    const bad = await t.request('POST', '/v2/agents/demo/tests', {
      body: { name: 'x', caller: { replay: { call_id: 'call_nope' } } },
    });
    expect(bad.status).toBe(400);
    expect(errorOf(bad).details).toMatch(/caller\.replay\.call_id: "call_nope" is not a call of this organization/);
    const run = await t.request('POST', '/v2/agents/demo/test-runs', { body: { test_ids: ['test_nope'] } });
    expect(run.status).toBe(400);
    expect(errorOf(run).details).toMatch(/test_nope/);
  });
});
