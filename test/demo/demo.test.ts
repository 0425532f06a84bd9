import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAgentsFile } from '../../src/agents/file.ts';
import type { AgentConfig } from '../../src/agents/schema.ts';
import { analyzeCall } from '../../src/analysis/analyze.ts';
import { demoRoutes } from '../../src/demo/routes.ts';
import { callerSystemPrompt, HANG_UP_MARK } from '../../src/agent-tests/persona.ts';
import { bareName, confirmationCode, demoReply, menuKey, nameIn, timeIn } from '../../src/demo/script.ts';
import { completeChat, streamChat } from '../../src/llm/client.ts';
import { runReply, type ReplyOutcome } from '../../src/call/model/reply.ts';
import type { ChatMessage, LlmRequestMetadata } from '../../src/llm/types.ts';
import { ToolExecutor } from '../../src/tools/executor.ts';
import { testDispatcher } from '../support/outbound.ts';

let app: FastifyInstance;
let agent: AgentConfig;
let baseUrl: string;

const metadata: LlmRequestMetadata = {
  call_id: 'c1',
  agent_id: 'demo',
  agent_version: 1,
  call_type: 'web',
  call_from: null,
  call_to: null,
  metadata: {},
  dynamic_variables: {},
};

/** The demo agent file, with PUBLIC_URL filled in as the service does when loading it. */
function loadDemoAgent(publicUrl: string): AgentConfig {
  const file = fileURLToPath(new URL('../../media/agents/demo.json', import.meta.url));
  const [entry] = parseAgentsFile(readFileSync(file, 'utf8'), publicUrl);
  expect(entry!.agentId).toBe('demo');
  return entry!.config;
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
  /** A conversation with the demo agent over real HTTP: the model server and its booking tool. */
  function conversation() {
    let t = 0;
    const tools = new ToolExecutor(agent.tools, { dispatcher: testDispatcher, clock: () => (t += 1) });
    const history: ChatMessage[] = [
      { role: 'system', content: agent.system_prompt },
      { role: 'assistant', content: agent.begin_message },
    ];
    const spoken: string[] = [];
    const turn = async (heard: string): Promise<{ outcome: ReplyOutcome; said: string }> => {
      history.push({ role: 'user', content: heard });
      spoken.length = 0;
      const outcome = await runReply({
        llm: agent.llm,
        messages: history,
        metadata,
        tools,
        hooks: { onChunk: (c) => spoken.push(c), confirmSpoken: async () => true },
        client: { dispatcher: testDispatcher },
      });
      history.push(...outcome.messages);
      return { outcome, said: spoken.join(' ') };
    };
    return { history, turn };
  }

  it('runs the front-desk call: name, day and time, a read-back the caller confirms, booking through the real tool, goodbye with end_call', async () => {
    const { history, turn } = conversation();
    expect((await turn('um yes hi its jon smyth')).said).toBe(
      'Thank you, Jon Smyth. What day and time would you like to come in?',
    );
    expect((await turn('tomorrow at ten a m.')).said).toBe(
      'I have you down for tomorrow at ten a m, Jon Smyth. Shall I book it?',
    );

    const booked = await turn('yes please');
    expect(booked.outcome.kind).toBe('reply');
    const code = confirmationCode('Jon Smyth', 'tomorrow at ten a m');
    expect(booked.said).toBe(
      `Let me book that for you. You're all set, Jon Smyth. I've booked you for tomorrow at ten a m. Your confirmation code is ${code}. Is there anything else I can help you with?`,
    );
    expect(booked.outcome.messages[1]).toEqual({
      role: 'tool',
      tool_call_id: expect.stringMatching(/^call_demo_/) as unknown as string,
      content: JSON.stringify({ status: 'booked', confirmation: code, name: 'Jon Smyth', time: 'tomorrow at ten a m' }),
    });

    const bye = await turn('no thats all thanks');
    expect(bye.outcome.kind).toBe('end_call');
    expect(bye.said).toBe('Thank you for calling the demo front desk. Goodbye!');

    const transcript = history
      .filter(
        (m): m is { role: 'user' | 'assistant'; content: string } =>
          (m.role === 'user' || m.role === 'assistant') && typeof m.content === 'string',
      )
      .map((m) => ({ role: m.role === 'assistant' ? 'agent' : 'user', content: m.content }));
    const analysis = await analyzeCall({
      agent,
      transcript,
      metadata,
      logger: pino({ level: 'silent' }),
      client: { dispatcher: testDispatcher },
    });
    expect(analysis).toEqual({
      summary: 'The caller, Jon Smyth, booked an appointment for tomorrow at ten a m with the demo front desk.',
      user_sentiment: 'positive',
      custom_analysis_data: [
        { name: 'appointment_booked', value: true },
        { name: 'appointment_time', value: 'tomorrow at ten a m' },
      ],
    });
  });

  it('takes the name and the time from wherever the caller said them: a time in the first sentence is kept while the name is asked for', async () => {
    const { turn } = conversation();
    expect((await turn('Hello, I would like to book a visit for Friday morning.')).said).toBe(
      'Friday morning, got it. May I have your name, please?',
    );
    expect((await turn('My name is Maria Lopez.')).said).toBe(
      'Thank you, Maria Lopez. I have you down for Friday morning, Maria Lopez. Shall I book it?',
    );
    const booked = await turn('Yes.');
    expect(booked.outcome.messages[0]).toMatchObject({
      tool_calls: [
        { function: { name: 'book_appointment', arguments: '{"name":"Maria Lopez","time":"Friday morning"}' } },
      ],
    });
  });

  it('re-asks what is missing instead of taking a request for a name', async () => {
    const { turn } = conversation();
    expect((await turn('I would like to book an appointment.')).said).toBe(
      "I'd be happy to book that for you. May I have your name, please?",
    );
    expect((await turn('John Smith.')).said).toBe(
      'Thank you, John Smith. What day and time would you like to come in?',
    );
    expect((await turn('Hmm, let me think.')).said).toBe('What day and time would you like to come in?');
    expect((await turn('Next Monday morning works for me.')).said).toBe(
      'I have you down for next Monday morning, John Smith. Shall I book it?',
    );
  });

  it('books only what the caller confirmed: a no starts over, a changed time is read back again, an unclear answer is asked again', async () => {
    const { turn } = conversation();
    await turn('This is Ann and I need Tuesday at 4pm');
    expect((await turn('hmm')).said).toBe(
      'Sorry, I did not catch that. I have you down for Tuesday at 4pm, Ann. Shall I book it? Please say yes or no, or press 1 for yes and 2 for no.',
    );
    expect((await turn('Actually, make it Wednesday at 4pm.')).said).toBe(
      'I have you down for Wednesday at 4pm, Ann. Shall I book it?',
    );
    expect((await turn('No, that is wrong.')).said).toBe(
      "Sorry about that, let's start over. May I have your name, please?",
    );
    expect((await turn('Bob')).said).toBe('Thank you, Bob. What day and time would you like to come in?');
    expect((await turn('friday noon')).said).toBe('I have you down for Friday noon, Bob. Shall I book it?');
    const booked = await turn('Yes, go ahead.');
    expect(booked.outcome.messages[0]).toMatchObject({
      tool_calls: [{ function: { name: 'book_appointment', arguments: '{"name":"Bob","time":"Friday noon"}' } }],
    });
  });

  it('takes 1 on the keypad as yes and 2 as no at the read-back, and never a key as a name', async () => {
    const yes = conversation();
    expect((await yes.turn('Keypad: 1234')).said).toBe('Welcome to the demo front desk. May I have your name, please?');
    await yes.turn('my name is ann');
    await yes.turn('friday at noon');
    expect((await yes.turn('Keypad: 1')).said).toMatch(/^Let me book that for you\. You're all set, Ann\./);
    const no = conversation();
    await no.turn('my name is ann');
    await no.turn('friday at noon');
    expect((await no.turn('Keypad: 2')).said).toBe("Sorry about that, let's start over. May I have your name, please?");
  });

  it('calling a phone menu, presses the key for appointments and then listens, saying nothing', async () => {
    const { history, turn } = conversation();
    const menu = await turn('Thank you for calling. For billing, press one. For appointments, press two.');
    expect(menu.said).toBe('');
    expect(menu.outcome).toMatchObject({
      kind: 'reply',
      messages: [
        { role: 'assistant', tool_calls: [{ function: { name: 'press_digits', arguments: '{"digits":"2"}' } }] },
        { role: 'tool' },
      ],
    });
    // No key could be played outside a call: the model is told, and still says nothing over the menu.
    expect(history.at(-1)).toMatchObject({ role: 'tool', content: 'Keypad tones cannot be played on this call.' });
  });

  it('reads a menu heard over turns as one: the option named in a turn the greeting answered is pressed at the next', async () => {
    const { history, turn } = conversation();
    // The callee's first words, which the greeting (history's begin message) answered, came before it.
    history.splice(1, 0, { role: 'user', content: 'For appointments, press one.' });
    const menu = await turn('For billing, press two.');
    expect(menu.outcome.messages[0]).toMatchObject({
      tool_calls: [{ function: { name: 'press_digits', arguments: '{"digits":"1"}' } }],
    });
    // Once pressed, what the menu said before is spent: its next words name no option to press.
    const next = await turn('For billing, press two.');
    expect(next.outcome.messages[0]).not.toHaveProperty('tool_calls');
  });

  it("plays an agent test's simulated caller from its persona and goal: name and time when asked, yes to the read-back, goodbye and hang up when offered more", () => {
    const system = {
      role: 'system' as const,
      content: callerSystemPrompt(
        'John Smith, a patient of the clinic.',
        'Book an appointment for next Monday morning.',
      ),
    };
    const caller = (...heard: string[]) =>
      demoReply({
        model: 'demo',
        temperature: 0,
        stream: false,
        messages: [
          system,
          ...heard.flatMap((h, i) => [
            { role: 'user' as const, content: h },
            ...(i < heard.length - 1 ? [{ role: 'assistant' as const, content: 'x' }] : []),
          ]),
        ],
      }).text;
    expect(caller('Hello, thanks for calling the demo front desk. May I have your name, please?')).toBe(
      'My name is John Smith.',
    );
    expect(caller('a', 'Thank you, John Smith. What day and time would you like to come in?')).toBe(
      'Next Monday morning works for me.',
    );
    expect(caller('a', 'b', 'I have you down for next Monday morning, John Smith. Shall I book it?')).toBe(
      'Yes, please.',
    );
    expect(caller('a', 'b', 'c', "You're all set. Is there anything else I can help you with?")).toBe(
      `No, thank you. Goodbye. ${HANG_UP_MARK}`,
    );
    expect(caller('Thank you for calling. Goodbye!')).toBe(HANG_UP_MARK);
    expect(caller('Good morning, how can I help?')).toBe(
      "Hi, I'm calling to book an appointment for next Monday morning.",
    );
  });

  it('finds the menu key for appointments wherever the label sits, and none in a menu without it', () => {
    expect(menuKey('For appointments press one, for billing press two.')).toBe('1');
    expect(menuKey('Press 1 for billing. Press 3 to book an appointment.')).toBe('3');
    expect(menuKey('To reach the front desk, press star.')).toBe('*');
    expect(menuKey('For billing press one, for sales press two.')).toBeNull();
    expect(menuKey('Please hold.')).toBeNull();
  });

  it.each(['Goodbye.', 'No, thank you, good-by.', 'Good bye!', 'Bye.'])(
    'ends the call when the caller says goodbye, however the recogniser spells it: %s',
    async (said) => {
      const { turn } = conversation();
      const bye = await turn(said);
      expect(bye.outcome.kind).toBe('end_call');
    },
  );

  it('runs a whole tool round with stream false when the agent asks for it', async () => {
    const outcome = await runReply({
      llm: { ...agent.llm, stream: false },
      messages: [
        { role: 'user', content: 'this is Ann, monday 9 please' },
        { role: 'assistant', content: 'I have you down for Monday 9, Ann. Shall I book it?' },
        { role: 'user', content: 'yes' },
      ],
      metadata,
      tools: new ToolExecutor(agent.tools, { dispatcher: testDispatcher, clock: () => 0 }),
      hooks: { confirmSpoken: async () => true },
      client: { dispatcher: testDispatcher },
    });
    expect(outcome.kind).toBe('reply');
    expect(outcome.messages.at(-1)?.content).toContain("I've booked you for Monday 9.");
  });

  it('answers stream false with one chat.completion object carrying the tool call', async () => {
    const result = await completeChat(
      { ...agent.llm, stream: false },
      {
        messages: [
          { role: 'user', content: 'my name is Ann, friday noon' },
          { role: 'assistant', content: 'I have you down for Friday noon, Ann. Shall I book it?' },
          { role: 'user', content: 'yes' },
        ],
        tools: new ToolExecutor(agent.tools, { dispatcher: testDispatcher, clock: () => 0 }).definitions,
        metadata,
      },
      { dispatcher: testDispatcher },
    );
    expect(result.content).toBe('Let me book that for you.');
    expect(result.finishReason).toBe('tool_calls');
    expect(result.toolCalls).toEqual([
      { id: 'call_demo_3_0', name: 'book_appointment', arguments: '{"name":"Ann","time":"Friday noon"}' },
    ]);
  });

  it('streams SSE chunks ending in [DONE], with a usage chunk when asked', async () => {
    const res = await fetch(`${baseUrl}/demo/llm/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'demo',
        messages: [{ role: 'user', content: 'hello' }],
        stream_options: { include_usage: true },
      }),
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
    const events = streamChat(
      agent.llm,
      {
        messages: [
          { role: 'assistant', content: 'Is there anything else I can help you with?' },
          { role: 'user', content: 'no' },
        ],
        tools: new ToolExecutor(agent.tools, { dispatcher: testDispatcher, clock: () => 0 }).definitions,
        tool_choice: 'none',
        metadata,
      },
      { dispatcher: testDispatcher },
    );
    const kinds: string[] = [];
    for await (const ev of events) kinds.push(ev.type);
    expect(kinds.includes('tool_calls')).toBe(false);
  });

  it('forces the named tool when tool_choice names one', async () => {
    const result = await completeChat(
      agent.llm,
      {
        messages: [{ role: 'user', content: 'hello' }],
        tools: new ToolExecutor(agent.tools, { dispatcher: testDispatcher, clock: () => 0 }).definitions,
        tool_choice: { type: 'function', function: { name: 'end_call' } },
        metadata,
      },
      { dispatcher: testDispatcher },
    );
    expect(result.toolCalls.map((c) => c.name)).toEqual(['end_call']);
  });

  it('rejects a request that is not a chat-completions request with 400 and {error, details}', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/demo/llm/v1/chat/completions',
      payload: { messages: [], temperature: 3 },
    });
    expect(res.statusCode).toBe(400);
    const body = res.json<{ error: string; details: string }>();
    expect(body.error).toBe('invalid request');
    expect(body.details).toContain('model');
    expect(body.details).toContain('temperature');
  });

  it('books through the demo tool endpoint and rejects a booking without a name', async () => {
    const ok = await app.inject({
      method: 'POST',
      url: '/demo/tools/book_appointment',
      payload: { name: 'Ann', time: 'noon' },
    });
    expect(ok.json()).toEqual({
      status: 'booked',
      confirmation: confirmationCode('Ann', 'noon'),
      name: 'Ann',
      time: 'noon',
    });
    const bad = await app.inject({ method: 'POST', url: '/demo/tools/book_appointment', payload: { time: 'noon' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ error: 'invalid request' });
  });

  it('finds a name only where the caller gives one, and a day and time in the words around it', () => {
    expect(nameIn("Uh, my name's ANNA-MARIE o'neil.")).toBe("Anna-marie O'neil");
    expect(nameIn('I would like to book an appointment')).toBeNull();
    expect(bareName('John Smith.')).toBe('John Smith');
    expect(bareName('I would like to book an appointment')).toBeNull();
    expect(bareName('Friday')).toBeNull();
    const times: [string, string | null][] = [
      ['Hello, I would like to book a visit for Friday morning', 'Friday morning'],
      ['tomorrow at ten a m.', 'tomorrow at ten a m'],
      ['Next Monday morning works for me.', 'next Monday morning'],
      ['This is Ann and I need Tuesday at 4pm', 'Tuesday at 4pm'],
      ['may I come at three', 'at three'],
      ['My name is Maria Lopez', null],
      ['I would like to book an appointment', null],
    ];
    for (const [heard, time] of times) expect(timeIn(heard), heard).toBe(time);
  });
});
