// What changed between two runs of an agent's tests, test by test: pass/fail, the conversation
// turn by turn, the tool calls made, and the latency; and how a replay compares with its call.
import { z } from 'zod';
import type { TranscriptItem, TranscriptMessage } from '../records/record.ts';
import { invocationsOf, type Invocation } from './expectations.ts';
import { OriginalComparisonSchema, type OriginalComparison, type TestResult, type TestRun } from './schema.ts';

const TurnChangeSchema = z.object({
  turn: z.int(),
  role: z.enum(['agent', 'user']).nullable(),
  before: z.string().nullable(),
  after: z.string().nullable(),
});
const ToolCallSchema = z.object({ name: z.string(), arguments: z.string() });

export const TestDiffSchema = z.object({
  test_id: z.string(),
  name: z.string(),
  status: z.object({ before: z.string().nullable(), after: z.string().nullable(), changed: z.boolean() }),
  /** Only the turns that differ (words compared without case or punctuation). */
  turns: z.array(TurnChangeSchema),
  tool_calls: z.object({
    added: z.array(ToolCallSchema),
    removed: z.array(ToolCallSchema),
    changed: z.array(z.object({ name: z.string(), before: z.string(), after: z.string() })),
  }),
  latency_e2e_p50_ms: z.object({
    before: z.number().nullable(),
    after: z.number().nullable(),
    change: z.number().nullable(),
  }),
  failed_assertions: z.array(z.string()).describe('assertions that fail in this run'),
  original: OriginalComparisonSchema.nullable().describe('replays: this run against the stored call'),
});

export const RunDiffSchema = z.object({
  run_id: z.string(),
  against: z.string(),
  agent_version: z.int(),
  against_agent_version: z.int(),
  summary: z.object({ newly_failing: z.int(), newly_passing: z.int(), changed: z.int(), unchanged: z.int() }),
  tests: z.array(TestDiffSchema),
});

export type TestDiff = z.infer<typeof TestDiffSchema>;
export type RunDiff = z.infer<typeof RunDiffSchema>;

/** Words only: a turn that says the same with other punctuation or case is the same turn. */
const words = (text: string): string =>
  text
    .toLowerCase()
    .replace(/['’]/g, '')
    .replace(/[^\p{L}\p{N}\s]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();

const messagesOf = (items: readonly TranscriptItem[] | null): TranscriptMessage[] =>
  (items ?? []).filter((item): item is TranscriptMessage => item.role === 'agent' || item.role === 'user');

/** The two conversations side by side, turn by turn. */
export function compareTurns(
  before: readonly TranscriptMessage[],
  after: readonly TranscriptMessage[],
): { turn: number; role: 'agent' | 'user' | null; before: string | null; after: string | null; same: boolean }[] {
  const out = [];
  for (let turn = 0; turn < Math.max(before.length, after.length); turn++) {
    const a = before[turn];
    const b = after[turn];
    const role = a && b && a.role !== b.role ? null : (a ?? b)!.role;
    out.push({
      turn,
      role,
      before: a?.content ?? null,
      after: b?.content ?? null,
      same: a !== undefined && b !== undefined && a.role === b.role && words(a.content) === words(b.content),
    });
  }
  return out;
}

/** A replay's conversation against the stored call it replays. */
export function compareWithOriginal(
  callId: string,
  original: readonly TranscriptMessage[],
  replay: readonly TranscriptItem[] | null,
): OriginalComparison {
  const turns = compareTurns(original, messagesOf(replay)).map((t) => ({
    turn: t.turn,
    role: t.role ?? 'agent',
    original: t.before,
    replay: t.after,
    same: t.same,
  }));
  return { call_id: callId, turns, same_turns: turns.filter((t) => t.same).length, total_turns: turns.length };
}

/** Calls paired by name in order: unpaired ones were added or removed, paired ones with other arguments changed. */
function diffToolCalls(before: Invocation[], after: Invocation[]): TestDiff['tool_calls'] {
  const left = [...before];
  const added: TestDiff['tool_calls']['added'] = [];
  const changed: TestDiff['tool_calls']['changed'] = [];
  for (const call of after) {
    const index = left.findIndex((b) => b.name === call.name);
    if (index === -1) {
      added.push(call);
      continue;
    }
    const [was] = left.splice(index, 1);
    if (was!.arguments !== call.arguments)
      changed.push({ name: call.name, before: was!.arguments, after: call.arguments });
  }
  return { added, removed: left, changed };
}

function diffTest(before: TestResult | undefined, after: TestResult | undefined): TestDiff {
  const either = (after ?? before)!;
  const turns = compareTurns(
    messagesOf(before?.transcript_with_tool_calls ?? null),
    messagesOf(after?.transcript_with_tool_calls ?? null),
  )
    .filter((t) => !t.same)
    .map(({ same: _same, ...t }) => t);
  const p50Before = before?.latency_e2e_ms?.p50 ?? null;
  const p50After = after?.latency_e2e_ms?.p50 ?? null;
  return {
    test_id: either.test_id,
    name: either.name,
    status: { before: before?.status ?? null, after: after?.status ?? null, changed: before?.status !== after?.status },
    turns,
    tool_calls: diffToolCalls(
      invocationsOf(before?.transcript_with_tool_calls ?? null),
      invocationsOf(after?.transcript_with_tool_calls ?? null),
    ),
    latency_e2e_p50_ms: {
      before: p50Before,
      after: p50After,
      change: p50Before !== null && p50After !== null ? Math.round(p50After - p50Before) : null,
    },
    failed_assertions: (after?.assertions ?? []).filter((a) => !a.passed).map((a) => `${a.assertion}: ${a.details}`),
    original: after?.original ?? null,
  };
}

/** `run` against `against`: every test either holds, in the order of `run` then any only `against` had. */
export function diffRuns(run: TestRun, against: TestRun): RunDiff {
  const earlier = new Map(against.results.map((r) => [r.test_id, r]));
  const ids = [
    ...run.results.map((r) => r.test_id),
    ...against.results.map((r) => r.test_id).filter((id) => !run.results.some((r) => r.test_id === id)),
  ];
  const now = new Map(run.results.map((r) => [r.test_id, r]));
  const tests = ids.map((id) => diffTest(earlier.get(id), now.get(id)));
  const passed = (status: string | null) => status === 'passed';
  const changed = tests.filter(
    (t) =>
      t.status.changed ||
      t.turns.length > 0 ||
      t.tool_calls.added.length + t.tool_calls.removed.length + t.tool_calls.changed.length > 0,
  ).length;
  return {
    run_id: run.run_id,
    against: against.run_id,
    agent_version: run.agent_version,
    against_agent_version: against.agent_version,
    summary: {
      newly_failing: tests.filter((t) => passed(t.status.before) && t.status.after !== null && !passed(t.status.after))
        .length,
      newly_passing: tests.filter((t) => t.status.before !== null && !passed(t.status.before) && passed(t.status.after))
        .length,
      changed,
      unchanged: tests.length - changed,
    },
    tests,
  };
}
