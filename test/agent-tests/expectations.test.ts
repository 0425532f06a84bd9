import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkExpectations,
  isSubset,
  judgeCall,
  modelJudge,
  JUDGE_REQUEST_TAG,
} from '../../src/agent-tests/expectations.ts';
import { ExpectSchema } from '../../src/agent-tests/schema.ts';
import { registeredRecord, type CallRecord } from '../../src/records/record.ts';
import { testDispatcher } from '../support/outbound.ts';

function callOf(overrides: Partial<CallRecord>): CallRecord {
  const base = registeredRecord({
    call_id: 'call_1',
    agent_id: 'demo',
    agent_version: 1,
    call_type: 'api',
    call_from: null,
    call_to: null,
  });
  return { ...base, call_status: 'ended', disconnection_reason: 'agent_hangup', ...overrides };
}

const booked = callOf({
  transcript: [
    { role: 'agent', content: 'May I have your name, please?', start_at: 0.2, end_at: 1.9 },
    { role: 'user', content: 'My name is John Smith.', start_at: 2.6, end_at: 3.8 },
    { role: 'agent', content: "You're all set, John Smith.", start_at: 4.3, end_at: 6 },
  ],
  transcript_with_tool_calls: [
    { role: 'agent', content: 'May I have your name, please?', start_at: 0.2, end_at: 1.9 },
    { role: 'user', content: 'My name is John Smith.', start_at: 2.6, end_at: 3.8 },
    {
      role: 'tool_call_invocation',
      tool_call_id: 't1',
      name: 'book_appointment',
      arguments: '{"name":"John Smith","time":"Monday"}',
      start_at: 4,
      end_at: 4,
    },
    {
      role: 'tool_call_result',
      tool_call_id: 't1',
      content: '{"status":"booked"}',
      successful: true,
      start_at: 4,
      end_at: 4.1,
    },
    { role: 'agent', content: "You're all set, John Smith.", start_at: 4.3, end_at: 6 },
  ],
  latency: { e2e: { p50: 500, p90: 700, p95: 800, p99: 900, min: 400, max: 900, num: 2 } },
});

const check = (expect: unknown, record: CallRecord = booked) => checkExpectations(ExpectSchema.parse(expect), record);

describe('test expectations', () => {
  it('a tool call matches by name, by a subset of its arguments, or by exactly its arguments', () => {
    const results = check({
      tool_calls: [
        { name: 'book_appointment' },
        { name: 'book_appointment', arguments: { name: 'John Smith' } },
        { name: 'book_appointment', arguments: { name: 'John Smith', time: 'Monday' }, match: 'exact' },
        { name: 'book_appointment', arguments: { name: 'John Smith' }, match: 'exact' },
        { name: 'book_appointment', arguments: { name: 'Ann' } },
        { name: 'transfer_call' },
      ],
    });
    expect(results.map((r) => r.passed)).toEqual([true, true, true, false, false, false]);
    expect(results[3]!.details).toBe(
      'expected book_appointment with exactly {"name":"John Smith"}; called: book_appointment({"name":"John Smith","time":"Monday"})',
    );
    expect(results[5]!.details).toBe(
      'transfer_call was never called; called: book_appointment({"name":"John Smith","time":"Monday"})',
    );
  });

  it('a subset holds every key expected with an equal value, objects compared recursively', () => {
    expect(isSubset({ a: 1, b: { c: 'x' } }, { a: 1, b: { c: 'x', d: 2 }, e: 3 })).toBe(true);
    expect(isSubset({ a: [1, 2] }, { a: [1, 2, 3] })).toBe(false);
    expect(isSubset({ a: 1 }, [1])).toBe(false);
    expect(isSubset({ a: null }, {})).toBe(false);
  });

  it('transcript text is found in any case, a regex case-insensitively, and either only in the role asked for', () => {
    const results = check({
      transcript_contains: [
        'ALL SET',
        { regex: 'name is \\w+ smith' },
        { text: 'john smith', role: 'agent' },
        { text: 'my name', role: 'agent' },
      ],
      transcript_excludes: ['goodbye', { text: 'name', role: 'user' }],
    });
    expect(results.map((r) => [r.assertion, r.passed])).toEqual([
      ['transcript_contains[0]', true],
      ['transcript_contains[1]', true],
      ['transcript_contains[2]', true],
      ['transcript_contains[3]', false],
      ['transcript_excludes[0]', true],
      ['transcript_excludes[1]', false],
    ]);
    expect(results[1]!.details).toBe('user at 2.6 s: "My name is John Smith."');
    expect(results[3]!.details).toBe('no message holds "my name" (agent)');
    expect(results[5]!.details).toBe('user at 2.6 s said "name" (user): "My name is John Smith."');
  });

  it('checks how the call ended, how many times the agent spoke, and the voice-to-voice p95', () => {
    expect(check({ disconnection_reason: 'agent_hangup', max_turns: 2, e2e_p95_ms: 800 }).every((r) => r.passed)).toBe(
      true,
    );
    const failed = check({ disconnection_reason: 'user_hangup', max_turns: 1, e2e_p95_ms: 799 });
    expect(failed.map((r) => r.details)).toEqual([
      'expected user_hangup, the call ended agent_hangup',
      'the agent spoke 2 times (at most 1)',
      'voice-to-voice p95 800 ms over 2 turns (at most 799)',
    ]);
    expect(check({ e2e_p95_ms: 1000 }, callOf({ latency: null }))[0]).toMatchObject({
      passed: false,
      details: 'no turn was answered, so there is no voice-to-voice latency',
    });
  });

  it('refuses a text match with both text and regex, or a regex that does not compile', () => {
    expect(ExpectSchema.safeParse({ transcript_contains: [{ text: 'a', regex: 'b' }] }).success).toBe(false);
    expect(ExpectSchema.safeParse({ transcript_contains: [{ regex: '(' }] }).success).toBe(false);
  });
});

describe('the model judge', () => {
  let server: Server;
  let url = '';
  const asked: { system: string; user: string; stream: unknown }[] = [];
  let answer = '{"pass": true, "reason": "The caller was booked."}';

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const parsed = JSON.parse(body) as { stream: unknown; messages: { content: string }[] };
        asked.push({ system: parsed.messages[0]!.content, user: parsed.messages[1]!.content, stream: parsed.stream });
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            id: 'j',
            object: 'chat.completion',
            created: 1,
            model: 'judge',
            choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: answer } }],
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('asks the model, without streaming, about the transcript with its tool calls, and passes or fails on its verdict with its reason', async () => {
    const judge = modelJudge(() => ({ dispatcher: testDispatcher }));
    const llm = { base_url: url, model: 'judge', temperature: 0, stream: true };
    expect(await judgeCall(judge, { criteria: 'The caller is booked.' }, booked, llm)).toEqual({
      assertion: 'judge',
      passed: true,
      details: 'The caller was booked.',
    });
    expect(asked[0]!.stream).toBe(false);
    expect(asked[0]!.system.split('\n')[0]).toBe(JUDGE_REQUEST_TAG);
    expect(asked[0]!.user).toContain('Criteria: The caller is booked.');
    expect(asked[0]!.user).toContain('tool call: book_appointment({"name":"John Smith","time":"Monday"})');

    answer = 'Sure! ```json\n{"pass": false, "reason": "No booking was confirmed."}\n```';
    expect(await judgeCall(judge, { criteria: 'x' }, booked, llm)).toMatchObject({
      passed: false,
      details: 'No booking was confirmed.',
    });
    answer = 'I think it went well.';
    expect((await judgeCall(judge, { criteria: 'x' }, booked, llm)).details).toMatch(
      /^no verdict: the judge's reply holds no JSON object/,
    );
    answer = '{"verdict": "yes"}';
    expect((await judgeCall(judge, { criteria: 'x' }, booked, llm)).details).toMatch(
      /^no verdict: the judge's reply is not \{"pass": boolean/,
    );
  });
});
