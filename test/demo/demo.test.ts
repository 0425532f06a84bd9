import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentConfigSchema, type AgentConfig } from '../../src/agents/schema.ts';
import { analyzeCall } from '../../src/analysis/analyze.ts';
import { demoRoutes } from '../../src/demo/routes.ts';
import { cleanName, confirmationCode } from '../../src/demo/script.ts';
import { completeChat, streamChat } from '../../src/llm/client.ts';
import { runReply, type ReplyOutcome } from '../../src/call/model/reply.ts';
import type { ChatMessage, LlmRequestMetadata } from '../../src/llm/types.ts';
import { ToolExecutor } from '../../src/tools/executor.ts';

let app: FastifyInstance;
let agent: AgentConfig;
let baseUrl: string;

const metadata: LlmRequestMetadata = { call_id: 'c1', agent_id: 'demo', agent_version: 1, call_type: 'web', call_from: null, call_to: null, metadata: {}, dynamic_variables: {} };

/** The demo agent file, with PUBLIC_URL filled in as the service does when loading it. */
function loadDemoAgent(publicUrl: string): AgentConfig {
  const file = fileURLToPath(new URL('../../media/agents/demo.json', import.meta.url));
  const raw = JSON.parse(readFileSync(file, 'utf8').replaceAll('{{PUBLIC_URL}}', publicUrl)) as Record<string, unknown>;
  expect(raw.agent_id).toBe('demo');
  delete raw.agent_id;
  return AgentConfigSchema.parse(raw);
}

beforeAll(async () => {
  app = Fastify();
  await app.register(demoRoutes, { prefix: '/demo' });
  baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  agent = loadDemoAgent(baseUrl);
});
afterAll(async () => {
  await app.close();
});

describe('demo model server', () => {
  it('runs the scripted front-desk call: name, booking through the real tool, goodbye with end_call', async () => {
    let t = 0;
    const tools = new ToolExecutor(agent.tools, { clock: () => (t += 1) });
    const history: ChatMessage[] = [
      { role: 'system', content: agent.system_prompt },
      { role: 'assistant', content: agent.begin_message },
    ];
    const spoken: string[] = [];
    const turn = async (heard: string): Promise<ReplyOutcome> => {
      history.push({ role: 'user', content: heard });
      const outcome = await runReply({
        llm: agent.llm,
        messages: history,
        metadata,
        tools,
        hooks: { onChunk: (c) => spoken.push(c), confirmSpoken: async () => true },
      });
      history.push(...outcome.messages);
      return outcome;
    };

    expect((await turn('um yes hi its jon smyth')).kind).toBe('reply');
    expect(spoken.join(' ')).toBe('Thank you, Jon Smyth. What day and time would you like to come in?');

    spoken.length = 0;
    const booked = await turn('tomorrow at ten a m.');
    expect(booked.kind).toBe('reply');
    const code = confirmationCode('Jon Smyth', 'tomorrow at ten a m');
    expect(spoken.join(' ')).toBe(
      `Let me book that for you. You're all set, Jon Smyth. I've booked you for tomorrow at ten a m. Your confirmation code is ${code}. Is there anything else I can help you with?`,
    );
    expect(booked.messages[1]).toEqual({
      role: 'tool',
      tool_call_id: expect.stringMatching(/^call_demo_/) as unknown as string,
      content: JSON.stringify({ status: 'booked', confirmation: code, name: 'Jon Smyth', time: 'tomorrow at ten a m' }),
    });

    spoken.length = 0;
    const bye = await turn('no thats all thanks');
    expect(bye.kind).toBe('end_call');
    expect(spoken.join(' ')).toBe('Thank you for calling the demo front desk. Goodbye!');

    const transcript = history
      .filter((m): m is { role: 'user' | 'assistant'; content: string } => (m.role === 'user' || m.role === 'assistant') && typeof m.content === 'string')
      .map((m) => ({ role: m.role === 'assistant' ? 'agent' : 'user', content: m.content }));
    const analysis = await analyzeCall({ agent, transcript, metadata, logger: pino({ level: 'silent' }) });
    expect(analysis).toEqual({
      summary: 'The caller, Jon Smyth, booked an appointment for tomorrow at ten a m with the demo front desk.',
      user_sentiment: 'positive',
      custom_analysis_data: [
        { name: 'appointment_booked', value: true },
        { name: 'appointment_time', value: 'tomorrow at ten a m' },
      ],
    });
  });

  it('runs a whole tool round with stream false when the agent asks for it', async () => {
    const outcome = await runReply({
      llm: { ...agent.llm, stream: false },
      messages: [
        { role: 'assistant', content: 'What day and time would you like to come in?' },
        { role: 'user', content: 'monday 9' },
      ],
      metadata,
      tools: new ToolExecutor(agent.tools, { clock: () => 0 }),
      hooks: { confirmSpoken: async () => true },
    });
    expect(outcome.kind).toBe('reply');
    expect(outcome.messages.at(-1)?.content).toContain("I've booked you for monday 9.");
  });

  it('answers stream false with one chat.completion object carrying the tool call', async () => {
    const result = await completeChat(
      { ...agent.llm, stream: false },
      {
        messages: [
          { role: 'assistant', content: 'What day and time would you like to come in?' },
          { role: 'user', content: 'friday noon' },
        ],
        tools: new ToolExecutor(agent.tools, { clock: () => 0 }).definitions,
        metadata,
      },
    );
    expect(result.content).toBe('Let me book that for you.');
    expect(result.finishReason).toBe('tool_calls');
    expect(result.toolCalls).toEqual([{ id: 'call_demo_2_0', name: 'book_appointment', arguments: '{"name":"friend","time":"friday noon"}' }]);
  });

  it('streams SSE chunks ending in [DONE], with a usage chunk when asked', async () => {
    const res = await fetch(`${baseUrl}/demo/llm/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo', messages: [{ role: 'user', content: 'hello' }], stream_options: { include_usage: true } }),
    });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const body = await res.text();
    const events = body.split('\n\n').filter((e) => e !== '');
    expect(events.every((e) => e.startsWith('data: '))).toBe(true);
    expect(events.at(-1)).toBe('data: [DONE]');
    const usage = JSON.parse(events.at(-2)?.slice(6) ?? '') as { choices: unknown[]; usage: unknown };
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toMatchObject({ total_tokens: expect.any(Number) as unknown as number });
  });

  it('honours tool_choice none by answering without a tool call', async () => {
    const events = streamChat(agent.llm, {
      messages: [
        { role: 'assistant', content: 'Is there anything else I can help you with?' },
        { role: 'user', content: 'no' },
      ],
      tools: new ToolExecutor(agent.tools, { clock: () => 0 }).definitions,
      tool_choice: 'none',
      metadata,
    });
    const kinds: string[] = [];
    for await (const ev of events) kinds.push(ev.type);
    expect(kinds.includes('tool_calls')).toBe(false);
  });

  it('forces the named tool when tool_choice names one', async () => {
    const result = await completeChat(agent.llm, {
      messages: [{ role: 'user', content: 'hello' }],
      tools: new ToolExecutor(agent.tools, { clock: () => 0 }).definitions,
      tool_choice: { type: 'function', function: { name: 'end_call' } },
      metadata,
    });
    expect(result.toolCalls.map((c) => c.name)).toEqual(['end_call']);
  });

  it('rejects a request that is not a chat-completions request with 400 and {error, details}', async () => {
    const res = await app.inject({ method: 'POST', url: '/demo/llm/v1/chat/completions', payload: { messages: [], temperature: 3 } });
    expect(res.statusCode).toBe(400);
    const body = res.json<{ error: string; details: string }>();
    expect(body.error).toBe('invalid request');
    expect(body.details).toContain('model');
    expect(body.details).toContain('temperature');
  });

  it('books through the demo tool endpoint and rejects a booking without a name', async () => {
    const ok = await app.inject({ method: 'POST', url: '/demo/tools/book_appointment', payload: { name: 'Ann', time: 'noon' } });
    expect(ok.json()).toEqual({ status: 'booked', confirmation: confirmationCode('Ann', 'noon'), name: 'Ann', time: 'noon' });
    const bad = await app.inject({ method: 'POST', url: '/demo/tools/book_appointment', payload: { time: 'noon' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ error: 'invalid request' });
  });

  it('takes whatever the recogniser heard as the name, dropping filler words', () => {
    expect(cleanName("Uh, my name's ANNA-MARIE o'neil.")).toBe("Anna-marie O'neil");
    expect(cleanName('...')).toBe('friend');
  });
});
