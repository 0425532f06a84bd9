import { describe, expect, it } from 'vitest';
import { diffRuns } from '../../src/agent-tests/diff.ts';
import { runJunitXml, runSummary } from '../../src/agent-tests/report.ts';
import type { TestResult, TestRun } from '../../src/agent-tests/schema.ts';

function result(name: string, status: TestResult['status'], extra: Partial<TestResult> = {}): TestResult {
  return {
    test_id: `test_${name}`,
    name,
    status,
    call_id: `call_${name}`,
    assertions: [],
    error: null,
    transcript_with_tool_calls: [],
    disconnection_reason: 'agent_hangup',
    latency_e2e_ms: { p50: 412.4, p95: 600 },
    duration_ms: 21_300,
    original: null,
    ...extra,
  };
}

const run: TestRun = {
  run_id: 'run_2',
  agent_id: 'demo',
  agent_version: 2,
  status: 'failed',
  concurrency: 2,
  created_at: 0,
  ended_at: 30_000,
  results: [
    result('booking <succeeds> & ends', 'failed', {
      assertions: [
        {
          assertion: 'tool_calls[0]',
          passed: false,
          details: 'book_appointment was never called; called: end_call({})',
        },
        { assertion: 'disconnection_reason', passed: true, details: 'agent_hangup' },
      ],
      transcript_with_tool_calls: [
        { role: 'tool_call_invocation', tool_call_id: 'a', name: 'end_call', arguments: '{}', start_at: 1, end_at: 1 },
      ],
    }),
    result('off-topic', 'passed'),
    result('replay', 'error', {
      call_id: null,
      duration_ms: null,
      latency_e2e_ms: null,
      error: 'the call to replay, call_x, no longer exists',
    }),
  ],
  summary: { total: 3, passed: 1, failed: 1, errored: 1, wall_ms: 30_000, audio_ms: 42_600 },
};

describe('run reports', () => {
  it('prints each test with its failed assertions, the totals with wall and call time, and what changed against the earlier run', () => {
    const before: TestRun = {
      ...run,
      run_id: 'run_1',
      agent_version: 1,
      status: 'passed',
      results: [
        result('booking <succeeds> & ends', 'passed', {
          transcript_with_tool_calls: [
            {
              role: 'tool_call_invocation',
              tool_call_id: 'b',
              name: 'book_appointment',
              arguments: '{"name":"John"}',
              start_at: 1,
              end_at: 1,
            },
          ],
        }),
      ],
    };
    expect(runSummary(run, diffRuns(run, before)).split('\n')).toEqual([
      'Agent demo version 2, run run_2',
      '  FAIL  booking <succeeds> & ends (21.3 s, voice-to-voice p50 412 ms, call call_booking <succeeds> & ends)',
      '        tool_calls[0]: book_appointment was never called; called: end_call({})',
      '  PASS  off-topic (21.3 s, voice-to-voice p50 412 ms, call call_off-topic)',
      '  ERROR replay (no call)',
      '        the call to replay, call_x, no longer exists',
      '1 passed, 1 failed, 1 errors of 3, in 30.0 s for 42.6 s of calls',
      'Against run run_1 (version 1): 1 newly failing, 0 newly passing, 3 changed',
      '  booking <succeeds> & ends: passed -> failed; no longer calls book_appointment({"name":"John"}); now calls end_call({})',
      '  off-topic: not run -> passed',
      '  replay: not run -> error',
    ]);
  });

  it('writes JUnit XML: a failed test a failure with its assertions, one that could not run an error, names escaped', () => {
    const xml = runJunitXml(run);
    expect(xml).toContain('<testsuite name="agent demo v2" tests="3" failures="1" errors="1"');
    expect(xml).toContain('<testcase classname="agent.demo" name="booking &lt;succeeds> &amp; ends" time="21.3">');
    expect(xml).toContain('<failure message="tool_calls[0]: book_appointment was never called; called: end_call({})"');
    expect(xml).toContain('<error message="the call to replay, call_x, no longer exists"');
  });
});
