// A finished run as a person reads it in a terminal, and as JUnit XML for a CI server.
import junitExports, { type Builder } from 'junit-report-builder';
import type { RunDiff } from './diff.ts';
import type { TestRun } from './schema.ts';

// The package's types declare an ES default export; Node hands an ES module its CommonJS exports, which are the builder
// itself.
const junit = junitExports as unknown as Builder;

const MARK = { passed: 'PASS', failed: 'FAIL', error: 'ERROR', pending: 'PENDING', running: 'RUNNING' } as const;

const seconds = (ms: number | null): string => (ms === null ? '?' : `${(ms / 1000).toFixed(1)} s`);

/** One line per test, each failed assertion under it, the totals, and what changed against the diff's run. */
export function runSummary(run: TestRun, diff?: RunDiff | null): string {
  const lines = [`Agent ${run.agent_id} version ${run.agent_version}, run ${run.run_id}`];
  for (const result of run.results) {
    const latency = result.latency_e2e_ms ? `, voice-to-voice p50 ${Math.round(result.latency_e2e_ms.p50)} ms` : '';
    lines.push(
      `  ${MARK[result.status].padEnd(5)} ${result.name} (${result.duration_ms === null ? 'no call' : seconds(result.duration_ms)}${latency}${result.call_id ? `, call ${result.call_id}` : ''})`,
    );
    for (const assertion of result.assertions.filter((a) => !a.passed))
      lines.push(`        ${assertion.assertion}: ${assertion.details}`);
    if (result.error) lines.push(`        ${result.error}`);
    if (result.original)
      lines.push(
        `        the replayed call said the same in ${result.original.same_turns} of ${result.original.total_turns} turns`,
      );
  }
  const { summary } = run;
  lines.push(
    `${summary.passed} passed, ${summary.failed} failed, ${summary.errored} errors of ${summary.total}, in ${seconds(summary.wall_ms)} for ${seconds(summary.audio_ms)} of calls`,
  );
  if (diff) {
    lines.push(
      `Against run ${diff.against} (version ${diff.against_agent_version}): ${diff.summary.newly_failing} newly failing, ${diff.summary.newly_passing} newly passing, ${diff.summary.changed} changed`,
    );
    for (const test of diff.tests) {
      const { added, removed, changed } = test.tool_calls;
      const notes = [
        test.status.changed ? `${test.status.before ?? 'not run'} -> ${test.status.after ?? 'not run'}` : '',
        ...removed.map((c) => `no longer calls ${c.name}(${c.arguments})`),
        ...added.map((c) => `now calls ${c.name}(${c.arguments})`),
        ...changed.map((c) => `calls ${c.name} with ${c.after} instead of ${c.before}`),
        test.turns.length === 0 ? '' : test.turns.length === 1 ? '1 turn differs' : `${test.turns.length} turns differ`,
      ].filter((n) => n !== '');
      if (notes.length > 0) lines.push(`  ${test.name}: ${notes.join('; ')}`);
    }
  }
  return lines.join('\n');
}

/** One suite for the run, one case per test; a failed assertion is a failure, a test that could not run an error. */
export function runJunitXml(run: TestRun): string {
  const builder = junit.newBuilder();
  const suite = builder.testSuite().name(`agent ${run.agent_id} v${run.agent_version}`).property('run_id', run.run_id);
  for (const result of run.results) {
    const testCase = suite
      .testCase()
      .className(`agent.${run.agent_id}`)
      .name(result.name)
      .time((result.duration_ms ?? 0) / 1000);
    if (result.call_id) testCase.property('call_id', result.call_id);
    const failed = result.assertions.filter((a) => !a.passed);
    if (result.status === 'error') testCase.error(result.error ?? 'the test could not run');
    else if (result.status === 'failed') testCase.failure(failed.map((a) => `${a.assertion}: ${a.details}`).join('\n'));
  }
  return builder.build();
}
