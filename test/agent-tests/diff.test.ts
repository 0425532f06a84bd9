import { describe, expect, it } from 'vitest';
import { compareWithOriginal, diffRuns } from '../../src/agent-tests/diff.ts';
import type { TestResult, TestRun } from '../../src/agent-tests/schema.ts';
import type { TranscriptItem } from '../../src/records/record.ts';

const say = (role: 'agent' | 'user', content: string, at: number): TranscriptItem => ({
  role,
  content,
  start_at: at,
  end_at: at + 1,
});
const tool = (name: string, args: string, at: number): TranscriptItem => ({
  role: 'tool_call_invocation',
  tool_call_id: `${name}${at}`,
  name,
  arguments: args,
  start_at: at,
  end_at: at,
});

function result(
  testId: string,
  status: TestResult['status'],
  items: TranscriptItem[],
  p50: number | null = 500,
): TestResult {
  return {
    test_id: testId,
    name: `test ${testId}`,
    status,
    call_id: `call_${testId}`,
    assertions:
      status === 'failed'
        ? [
            {
              assertion: 'tool_calls[0]',
              passed: false,
              details: 'book_appointment was never called; no tool was called',
            },
          ]
        : [],
    error: null,
    transcript_with_tool_calls: items,
    disconnection_reason: 'agent_hangup',
    latency_e2e_ms: p50 === null ? null : { p50, p95: p50 + 100 },
    duration_ms: 10_000,
    original: null,
  };
}

function run(id: string, version: number, results: TestResult[]): TestRun {
  return {
    run_id: id,
    agent_id: 'demo',
    agent_version: version,
    status: 'passed',
    concurrency: 1,
    created_at: 0,
    ended_at: 1,
    results,
    summary: { total: results.length, passed: 0, failed: 0, errored: 0, wall_ms: 1, audio_ms: 0 },
  };
}

const booking = [
  say('agent', 'Your name?', 0),
  say('user', 'John.', 2),
  tool('book_appointment', '{"name":"John"}', 4),
  say('agent', "You're all set, John.", 5),
];

describe('run diffs', () => {
  it('names a tool call a test no longer makes, the turns that changed, the pass turned fail and the latency change', () => {
    const before = run('run_1', 1, [result('a', 'passed', booking, 500)]);
    const after = run('run_2', 2, [
      result(
        'a',
        'failed',
        [
          say('agent', 'Your name?', 0),
          say('user', 'John.', 2),
          say('agent', 'Booking is not available right now.', 5),
        ],
        620,
      ),
    ]);
    const diff = diffRuns(after, before);
    expect(diff).toMatchObject({
      run_id: 'run_2',
      against: 'run_1',
      agent_version: 2,
      against_agent_version: 1,
      summary: { newly_failing: 1, newly_passing: 0, changed: 1, unchanged: 0 },
    });
    expect(diff.tests[0]).toEqual({
      test_id: 'a',
      name: 'test a',
      status: { before: 'passed', after: 'failed', changed: true },
      turns: [
        { turn: 2, role: 'agent', before: "You're all set, John.", after: 'Booking is not available right now.' },
      ],
      tool_calls: { added: [], removed: [{ name: 'book_appointment', arguments: '{"name":"John"}' }], changed: [] },
      latency_e2e_p50_ms: { before: 500, after: 620, change: 120 },
      failed_assertions: ['tool_calls[0]: book_appointment was never called; no tool was called'],
      original: null,
    });
  });

  it('pairs tool calls by name in order: other arguments are a change, an extra call an addition', () => {
    const before = run('r1', 1, [result('a', 'passed', [tool('book_appointment', '{"name":"John"}', 1)])]);
    const after = run('r2', 1, [
      result('a', 'passed', [tool('book_appointment', '{"name":"Jon"}', 1), tool('end_call', '{}', 2)]),
    ]);
    expect(diffRuns(after, before).tests[0]!.tool_calls).toEqual({
      added: [{ name: 'end_call', arguments: '{}' }],
      removed: [],
      changed: [{ name: 'book_appointment', before: '{"name":"John"}', after: '{"name":"Jon"}' }],
    });
  });

  it('a turn said with other case and punctuation is the same turn; a test one run did not run is shown with null there and counts neither way', () => {
    const before = run('r1', 1, [
      result('a', 'passed', [say('agent', "You're all set, John.", 0)]),
      result('b', 'passed', []),
    ]);
    const after = run('r2', 2, [result('a', 'passed', [say('agent', 'youre all set john', 0)])]);
    const diff = diffRuns(after, before);
    expect(diff.tests.map((t) => [t.test_id, t.turns.length, t.status])).toEqual([
      ['a', 0, { before: 'passed', after: 'passed', changed: false }],
      ['b', 0, { before: 'passed', after: null, changed: true }],
    ]);
    expect(diff.summary).toMatchObject({ newly_failing: 0, newly_passing: 0 });
  });

  it('compares a replay with the call it replays turn by turn, counting the turns that say the same', () => {
    const original = [say('agent', 'Your name?', 0), say('user', 'John.', 2), say('agent', 'Thanks, John.', 4)] as {
      role: 'agent' | 'user';
      content: string;
      start_at: number;
      end_at: number;
    }[];
    const replay = [
      say('agent', 'Your name?', 0),
      say('user', 'Jon.', 2),
      tool('x', '{}', 3),
      say('agent', 'Thanks, Jon.', 4),
      say('agent', 'Anything else?', 6),
    ];
    const comparison = compareWithOriginal('call_o', original, replay);
    expect(comparison).toMatchObject({ call_id: 'call_o', same_turns: 1, total_turns: 4 });
    expect(comparison.turns[3]).toEqual({
      turn: 3,
      role: 'agent',
      original: null,
      replay: 'Anything else?',
      same: false,
    });
  });
});
