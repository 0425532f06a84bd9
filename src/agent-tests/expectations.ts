// What a test expects, checked against the finished call's record: each assertion passes or fails
// with details a QA engineer can act on (what was expected, what the call did instead).
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import type { LlmConfig } from '../agents/schema.ts';
import { jsonObjectIn } from '../analysis/analyze.ts';
import { llmMetadataOf, type CallRecord, type TranscriptItem, type TranscriptMessage } from '../records/record.ts';
import { completeChat, type LlmClientOptions } from '../llm/client.ts';
import type { ChatMessage } from '../llm/types.ts';
import type { AssertionResult, Expect, TextMatch } from './schema.ts';

/** A model's verdict on a call against criteria in words. */
export interface Verdict {
  pass: boolean;
  reason: string;
}

export type Judge = (criteria: string, llm: LlmConfig, record: CallRecord) => Promise<Verdict>;

export interface Invocation {
  name: string;
  arguments: string;
}

/** The tool calls the model made in a transcript, in order. */
export const invocationsOf = (items: readonly TranscriptItem[] | null): Invocation[] =>
  (items ?? []).flatMap((item) =>
    item.role === 'tool_call_invocation' ? [{ name: item.name, arguments: item.arguments }] : [],
  );

function parsedArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Every key of `expected` is in `actual` with a matching value (objects recursively, all else equal). */
export function isSubset(expected: unknown, actual: unknown): boolean {
  if (expected !== null && typeof expected === 'object' && !Array.isArray(expected)) {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
    const object = actual as Record<string, unknown>;
    return Object.entries(expected).every(([key, value]) => key in object && isSubset(value, object[key]));
  }
  return isDeepStrictEqual(expected, actual);
}

function describeMatch(match: TextMatch): string {
  if (typeof match === 'string') return JSON.stringify(match);
  const what = match.text !== undefined ? JSON.stringify(match.text) : `/${match.regex}/i`;
  return match.role ? `${what} (${match.role})` : what;
}

/** The messages a text match is looked for in, and whether one of them holds it. */
function matches(match: TextMatch, messages: readonly TranscriptMessage[]): TranscriptMessage | undefined {
  const role = typeof match === 'string' ? undefined : match.role;
  const test =
    typeof match === 'string' || match.text !== undefined
      ? (content: string) =>
          content.toLowerCase().includes((typeof match === 'string' ? match : match.text!).toLowerCase())
      : (content: string) => new RegExp(match.regex!, 'i').test(content);
  return messages.find((m) => (role === undefined || m.role === role) && test(m.content));
}

function checkToolCalls(expected: NonNullable<Expect['tool_calls']>, made: readonly Invocation[]): AssertionResult[] {
  const list =
    made.length === 0 ? 'no tool was called' : `called: ${made.map((m) => `${m.name}(${m.arguments})`).join(', ')}`;
  return expected.map((want, index) => {
    const assertion = `tool_calls[${index}]`;
    const named = made.filter((m) => m.name === want.name);
    if (named.length === 0) return { assertion, passed: false, details: `${want.name} was never called; ${list}` };
    if (want.arguments === undefined) return { assertion, passed: true, details: `${want.name} was called` };
    const fits = named.find((m) => {
      const actual = parsedArguments(m.arguments);
      return want.match === 'exact' ? isDeepStrictEqual(want.arguments, actual) : isSubset(want.arguments, actual);
    });
    const wanted = `${want.name} with ${want.match === 'exact' ? 'exactly' : 'at least'} ${JSON.stringify(want.arguments)}`;
    return fits
      ? { assertion, passed: true, details: `${want.name}(${fits.arguments})` }
      : { assertion, passed: false, details: `expected ${wanted}; ${list}` };
  });
}

/** Checks everything `expect` names but the judge (see judgeCall). */
export function checkExpectations(expect: Expect, record: CallRecord): AssertionResult[] {
  const results: AssertionResult[] = [];
  const messages = record.transcript ?? [];
  if (expect.tool_calls)
    results.push(...checkToolCalls(expect.tool_calls, invocationsOf(record.transcript_with_tool_calls)));
  expect.transcript_contains?.forEach((match, index) => {
    const found = matches(match, messages);
    results.push({
      assertion: `transcript_contains[${index}]`,
      passed: found !== undefined,
      details: found
        ? `${found.role} at ${found.start_at.toFixed(1)} s: ${JSON.stringify(found.content)}`
        : `no message holds ${describeMatch(match)}`,
    });
  });
  expect.transcript_excludes?.forEach((match, index) => {
    const found = matches(match, messages);
    results.push({
      assertion: `transcript_excludes[${index}]`,
      passed: found === undefined,
      details: found
        ? `${found.role} at ${found.start_at.toFixed(1)} s said ${describeMatch(match)}: ${JSON.stringify(found.content)}`
        : `no message holds ${describeMatch(match)}`,
    });
  });
  if (expect.disconnection_reason) {
    const reason = record.disconnection_reason;
    results.push({
      assertion: 'disconnection_reason',
      passed: reason === expect.disconnection_reason,
      details:
        reason === expect.disconnection_reason
          ? reason
          : `expected ${expect.disconnection_reason}, the call ended ${reason ?? '(not ended)'}${record.disconnection_message ? `: ${record.disconnection_message}` : ''}`,
    });
  }
  if (expect.max_turns !== undefined) {
    const turns = messages.filter((m) => m.role === 'agent').length;
    results.push({
      assertion: 'max_turns',
      passed: turns <= expect.max_turns,
      details: `the agent spoke ${turns} time${turns === 1 ? '' : 's'} (at most ${expect.max_turns})`,
    });
  }
  if (expect.e2e_p95_ms !== undefined) {
    const e2e = record.latency?.e2e;
    results.push(
      e2e
        ? {
            assertion: 'e2e_p95_ms',
            passed: e2e.p95 <= expect.e2e_p95_ms,
            details: `voice-to-voice p95 ${Math.round(e2e.p95)} ms over ${e2e.num} turns (at most ${expect.e2e_p95_ms})`,
          }
        : {
            assertion: 'e2e_p95_ms',
            passed: false,
            details: 'no turn was answered, so there is no voice-to-voice latency',
          },
    );
  }
  return results;
}

export const JUDGE_REQUEST_TAG = 'AGENT TEST JUDGE REQUEST';

const VerdictSchema = z.object({ pass: z.boolean(), reason: z.string().max(4_000).default('') });

/** A judge that asks a chat-completions model for {"pass", "reason"} about the call's transcript. */
export function modelJudge(client: () => LlmClientOptions): Judge {
  return async (criteria, llm, record) => {
    const lines = (record.transcript_with_tool_calls ?? []).map((item) =>
      item.role === 'tool_call_invocation'
        ? `tool call: ${item.name}(${item.arguments})`
        : item.role === 'tool_call_result'
          ? `tool result: ${item.content.slice(0, 500)}`
          : `${item.role}: ${item.content}`,
    );
    const system = [
      JUDGE_REQUEST_TAG,
      'You grade a finished phone call between an AI voice agent and a caller against the criteria given.',
      'Reply with one JSON object and nothing else: {"pass": true | false, "reason": "<one or two sentences>"}',
    ].join('\n');
    const user = `Criteria: ${criteria}\nThe call ended: ${record.disconnection_reason ?? 'unknown'}\nTranscript:\n${lines.join('\n')}`;
    const messages: ChatMessage[] = [
      { role: 'system', content: system },
      { role: 'user', content: user },
    ];
    const reply = await completeChat(
      { ...llm, stream: false },
      { messages, metadata: llmMetadataOf(record, record.agent_version ?? 0) },
      client(),
    );
    const found = jsonObjectIn(reply.content);
    if ('error' in found) throw new Error(`the judge's ${found.error}: ${JSON.stringify(reply.content.slice(0, 200))}`);
    const verdict = VerdictSchema.safeParse(found.json);
    if (!verdict.success)
      throw new Error(
        `the judge's reply is not {"pass": boolean, "reason": string}: ${JSON.stringify(reply.content.slice(0, 200))}`,
      );
    return verdict.data;
  };
}

/** The judge's assertion: a verdict, or a failure saying why there was none. */
export async function judgeCall(
  judge: Judge,
  spec: NonNullable<Expect['judge']>,
  record: CallRecord,
  agentLlm: LlmConfig,
): Promise<AssertionResult> {
  try {
    const verdict = await judge(spec.criteria, spec.judge_llm ?? agentLlm, record);
    return {
      assertion: 'judge',
      passed: verdict.pass,
      details: verdict.reason || (verdict.pass ? 'passed' : 'failed'),
    };
  } catch (error) {
    return { assertion: 'judge', passed: false, details: `no verdict: ${(error as Error).message}` };
  }
}
