import { afterEach, describe, expect, it } from 'vitest';
import type { AgentTool, LlmConfig } from '../../../src/agents/schema.ts';
import { runReply, type ReplyHooks, type ReplyInput } from '../../../src/call/model/reply.ts';
import { ProviderChain } from '../../../src/call/providers.ts';
import type { ChatMessage } from '../../../src/llm/types.ts';
import { ToolExecutor } from '../../../src/tools/executor.ts';
import type { ToolTranscriptItem } from '../../../src/tools/transcript.ts';
import { chunk, replyStream, sseHeaders, startServer, type TestServer } from '../../support/http-server.ts';
import { testDispatcher } from '../../support/outbound.ts';

type Step = string | { text?: string; calls?: { id: string; name: string; arguments: string }[] } | 'hang';

let model: TestServer | undefined;
let toolServer: TestServer | undefined;
afterEach(async () => {
  await model?.close();
  await toolServer?.close();
  model = undefined;
  toolServer = undefined;
});

async function setup(steps: Step[], extraTools: AgentTool[] = []): Promise<{ llm: LlmConfig; tools: ToolExecutor }> {
  model = await startServer((_req, res, _body, n) => {
    const step = steps[Math.min(n, steps.length) - 1] ?? '';
    if (step === 'hang') {
      sseHeaders(res);
      return;
    }
    sseHeaders(res);
    res.end(typeof step === 'string' ? replyStream(step) : replyStream(step.text ?? '', step.calls ?? []));
  });
  toolServer = await startServer((_req, res, body) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ booked: true, echo: JSON.parse(body || '{}') as unknown }));
  });
  const agentTools: AgentTool[] = [
    {
      type: 'api',
      name: 'book',
      description: 'Book',
      url: `${toolServer.url}/book`,
      method: 'POST',
      timeout: 5,
      parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    },
    { type: 'end_call', name: 'end_call', description: 'End' },
    {
      type: 'transfer_call',
      name: 'transfer_call',
      description: 'Transfer',
      transfer_to: '+14155550100',
      mode: 'cold',
    },
    ...extraTools,
  ];
  let t = 0;
  return {
    llm: { base_url: model.url, model: 'm', temperature: 1, stream: true },
    tools: new ToolExecutor(agentTools, { dispatcher: testDispatcher, clock: () => (t += 0.5) }),
  };
}

const history: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Book me in, I am Ann.' },
];

interface Recorded {
  chunks: string[];
  items: ToolTranscriptItem[];
  confirmed: string[];
}

function hooks(spoken = true): ReplyHooks & Recorded {
  const rec: Recorded = { chunks: [], items: [], confirmed: [] };
  return {
    ...rec,
    onChunk: (c) => rec.chunks.push(c),
    onToolItem: (i) => rec.items.push(i),
    confirmSpoken: async (text) => {
      rec.confirmed.push(text);
      return spoken;
    },
  };
}

function input(llm: LlmConfig, tools: ToolExecutor, h: ReplyHooks, extra: Partial<ReplyInput> = {}): ReplyInput {
  return {
    llm,
    tools,
    hooks: h,
    messages: history,
    metadata: {
      call_id: 'c',
      agent_id: 'a',
      agent_version: 1,
      call_type: 'api',
      call_from: null,
      call_to: null,
      metadata: {},
      dynamic_variables: {},
    },
    ...extra,
    client: { dispatcher: testDispatcher, ...extra.client },
  };
}

const sentBodies = (): { messages: ChatMessage[]; tool_choice?: unknown }[] =>
  (model?.requests ?? []).map((r) => JSON.parse(r.body) as { messages: ChatMessage[]; tool_choice?: unknown });

describe('turn runner', () => {
  it('streams a plain reply as speakable chunks and returns it as the assistant message', async () => {
    const { llm, tools } = await setup(['Sure thing, Ann, I can help with that. What time suits you?']);
    const h = hooks();
    const outcome = await runReply(input(llm, tools, h));
    expect(h.chunks).toEqual(['Sure thing, Ann, I can help with that.', 'What time suits you?']);
    expect(outcome).toEqual({
      kind: 'reply',
      messages: [{ role: 'assistant', content: 'Sure thing, Ann, I can help with that. What time suits you?' }],
    });
    expect(sentBodies()[0]?.tool_choice).toBe('auto');
  });

  it('reports request, first-token and first-speakable-chunk times for latency', async () => {
    const { llm, tools } = await setup(['Hello there. Bye.']);
    let t = 1000;
    const timings: unknown[] = [];
    const h = { ...hooks(), onLlmTiming: (x: unknown) => timings.push(x) };
    await runReply(input(llm, tools, h, { client: { dispatcher: testDispatcher, now: () => (t += 5) } }));
    expect(timings).toEqual([
      { requestSentAt: 1005, firstTokenAt: 1010, firstChunkAt: 1015, endedAt: 1020, attempts: 1 },
    ]);
  });

  it('says a line while tools work: at once for a tool with speak_during_execution, after toolWaitMs for a slow one, never for a fast one, at most once a turn', async () => {
    const slow = await startServer(
      (_req, res) =>
        void setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'), 300),
    );
    try {
      const slowTool = (name: string, extra: Partial<AgentTool> = {}): AgentTool =>
        ({
          type: 'api',
          name,
          description: '',
          url: `${slow.url}/${name}`,
          method: 'POST',
          timeout: 5,
          parameters: { type: 'object', properties: {} },
          ...extra,
        }) as AgentTool;
      const run = async (calls: string[], extraTools: AgentTool[], toolWaitMs?: number) => {
        const { llm, tools } = await setup(
          [
            { text: '', calls: calls.map((name, i) => ({ id: `c${i}`, name, arguments: '{}' })) },
            { text: '', calls: [{ id: 'again', name: calls[0]!, arguments: '{}' }] },
            'Done.',
          ],
          extraTools,
        );
        const lines: string[] = [];
        const before = slow.requests.length;
        const h = {
          ...hooks(),
          onToolWait: (line: string) =>
            lines.push(
              `${line} (tool requests so far: ${slow.requests.length - before + (toolServer?.requests.length ?? 0)})`,
            ),
        };
        await runReply(input(llm, tools, h, toolWaitMs === undefined ? {} : { toolWaitMs }));
        await model?.close();
        await toolServer?.close();
        model = undefined;
        toolServer = undefined;
        return lines;
      };
      // Announced: the tool's own line, before its request goes out; the second round says nothing more.
      expect(
        await run(
          ['lookup'],
          [slowTool('lookup', { speak_during_execution: true, execution_message: 'Let me look that up.' })],
        ),
      ).toEqual(['Let me look that up. (tool requests so far: 0)']);
      // Slow and not announced: the default line once it has worked toolWaitMs.
      expect(await run(['lookup2'], [slowTool('lookup2')], 100)).toEqual([
        'One moment, please. (tool requests so far: 1)',
      ]);
      // Fast: nothing.
      expect(await run(['book'], [])).toEqual([]);
    } finally {
      await slow.close();
    }
  });

  it('runs tools after the reply before them is spoken, then asks the model again with the results', async () => {
    const call = { id: 'call_1', name: 'book', arguments: '{"name":"Ann"}' };
    const { llm, tools } = await setup([{ text: 'One moment.', calls: [call] }, 'You are booked.']);
    const h = hooks();
    const outcome = await runReply(input(llm, tools, h));
    expect(h.confirmed).toEqual(['One moment.']);
    expect(toolServer?.requests).toHaveLength(1);
    const added = [
      {
        role: 'assistant',
        content: 'One moment.',
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'book', arguments: '{"name":"Ann"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{"booked":true,"echo":{"name":"Ann"}}' },
    ];
    expect(sentBodies()[1]?.messages).toEqual([...history, ...added]);
    expect(outcome).toEqual({ kind: 'reply', messages: [...added, { role: 'assistant', content: 'You are booked.' }] });
    expect(h.items).toEqual([
      {
        role: 'tool_call_invocation',
        tool_call_id: 'call_1',
        name: 'book',
        arguments: '{"name":"Ann"}',
        start_at: 0.5,
        end_at: 0.5,
      },
      {
        role: 'tool_call_result',
        tool_call_id: 'call_1',
        content: '{"booked":true,"echo":{"name":"Ann"}}',
        successful: true,
        start_at: 0.5,
        end_at: 1,
      },
    ]);
  });

  it('never runs the tools of a reply that was interrupted before it was spoken', async () => {
    const { llm, tools } = await setup([
      { text: 'Booking now.', calls: [{ id: 'c1', name: 'book', arguments: '{"name":"Ann"}' }] },
    ]);
    const outcome = await runReply(input(llm, tools, hooks(false)));
    expect(outcome).toEqual({ kind: 'interrupted', messages: [{ role: 'assistant', content: 'Booking now.' }] });
    expect(toolServer?.requests).toHaveLength(0);
  });

  it('never fires end_call from a discarded reply', async () => {
    const { llm, tools } = await setup([
      { text: 'Goodbye!', calls: [{ id: 'c1', name: 'end_call', arguments: '{}' }] },
    ]);
    const outcome = await runReply(input(llm, tools, hooks(false)));
    expect(outcome.kind).toBe('interrupted');
  });

  it('reports end_call to the caller after its words were spoken', async () => {
    const { llm, tools } = await setup([
      { text: 'Thanks for calling. Goodbye!', calls: [{ id: 'c9', name: 'end_call', arguments: '{"reason":"done"}' }] },
    ]);
    const h = hooks();
    const outcome = await runReply(input(llm, tools, h));
    expect(h.chunks).toEqual(['Thanks for calling.', 'Goodbye!']);
    expect(outcome).toMatchObject({
      kind: 'end_call',
      call: { id: 'c9', name: 'end_call', arguments: '{"reason":"done"}' },
    });
    expect(h.items).toEqual([
      {
        role: 'tool_call_invocation',
        tool_call_id: 'c9',
        name: 'end_call',
        arguments: '{"reason":"done"}',
        start_at: 0.5,
        end_at: 0.5,
      },
    ]);
    expect(toolServer?.requests).toHaveLength(0);
  });

  it('reports transfer_call with the configured number', async () => {
    const { llm, tools } = await setup([
      { text: 'Transferring you.', calls: [{ id: 'c2', name: 'transfer_call', arguments: '{}' }] },
    ]);
    expect(await runReply(input(llm, tools, hooks()))).toMatchObject({
      kind: 'transfer_call',
      transferTo: '+14155550100',
    });
  });

  it('presses keys through pressDigits in the order the model gave them, tells the model what was pressed, and ends the turn when it has nothing to add', async () => {
    const calls = [
      { id: 'k1', name: 'press_digits', arguments: '{"digits":"1"}' },
      { id: 'k2', name: 'press_digits', arguments: '{"digits":"42#"}' },
    ];
    const { llm, tools } = await setup(
      [{ calls }, ''],
      [{ type: 'press_digits', name: 'press_digits', description: 'Keys' }],
    );
    const pressed: string[] = [];
    const h = { ...hooks(), pressDigits: async (digits: string) => (pressed.push(digits), true) };
    const outcome = await runReply(input(llm, tools, h));
    expect(pressed).toEqual(['1', '42#']);
    expect(outcome).toMatchObject({
      kind: 'reply',
      messages: [
        { role: 'assistant', content: null, tool_calls: [{ id: 'k1' }, { id: 'k2' }] },
        { role: 'tool', tool_call_id: 'k1', content: '{"pressed":"1"}' },
        { role: 'tool', tool_call_id: 'k2', content: '{"pressed":"42#"}' },
      ],
    });
    // Nothing to say after the keys (the menu speaks next): the turn ends there, no empty-reply loop.
    expect(model?.requests).toHaveLength(2);
    expect(toolServer?.requests).toHaveLength(0);
  });

  it('tells the model when keys were cut off, when they are not keys, and when the call cannot play them', async () => {
    const keypadTool: AgentTool[] = [{ type: 'press_digits', name: 'press_digits', description: 'Keys' }];
    let { llm, tools } = await setup(
      [{ calls: [{ id: 'k1', name: 'press_digits', arguments: '{"digits":"12"}' }] }, 'Hm.'],
      keypadTool,
    );
    const cut = { ...hooks(), pressDigits: async () => false };
    await runReply(input(llm, tools, cut));
    expect(cut.items.at(-1)).toMatchObject({
      role: 'tool_call_result',
      successful: false,
      content: expect.stringContaining('not all pressed'),
    });
    await model?.close();
    await toolServer?.close();
    ({ llm, tools } = await setup(
      [{ calls: [{ id: 'k2', name: 'press_digits', arguments: '{"digits":"call me"}' }] }, 'Hm.'],
      keypadTool,
    ));
    const pressed: string[] = [];
    const invalid = { ...hooks(), pressDigits: async (d: string) => (pressed.push(d), true) };
    await runReply(input(llm, tools, invalid));
    expect(pressed).toEqual([]);
    expect(invalid.items.at(-1)).toMatchObject({
      successful: false,
      content: expect.stringContaining('Invalid arguments for press_digits'),
    });
    await model?.close();
    await toolServer?.close();
    ({ llm, tools } = await setup(
      [{ calls: [{ id: 'k3', name: 'press_digits', arguments: '{"digits":"1"}' }] }, 'Hm.'],
      keypadTool,
    ));
    const none = hooks();
    await runReply(input(llm, tools, none));
    expect(none.items.at(-1)).toMatchObject({
      successful: false,
      content: 'Keypad tones cannot be played on this call.',
    });
  });

  it('answers transfer_call on a call that cannot transfer (a browser call) with the reason, and the model goes on', async () => {
    const { llm, tools } = await setup([
      { text: 'Transferring you.', calls: [{ id: 't1', name: 'transfer_call', arguments: '{}' }] },
      'Sorry, I cannot transfer you from here.',
    ]);
    const h = { ...hooks(), transferRefusal: 'Transfers need a phone line.' };
    const outcome = await runReply(input(llm, tools, h));
    expect(outcome).toMatchObject({
      kind: 'reply',
      messages: [
        { role: 'assistant', content: 'Transferring you.', tool_calls: [{ id: 't1' }] },
        { role: 'tool', tool_call_id: 't1', content: 'Transfers need a phone line.' },
        { role: 'assistant', content: 'Sorry, I cannot transfer you from here.' },
      ],
    });
    expect(h.items.at(-1)).toMatchObject({ role: 'tool_call_result', tool_call_id: 't1', successful: false });
  });

  it('ends with flow_error UNKNOWN_TOOL when the model calls a tool the agent lacks', async () => {
    const { llm, tools } = await setup([{ calls: [{ id: 'c1', name: 'launch_rocket', arguments: '{}' }] }]);
    expect(await runReply(input(llm, tools, hooks()))).toMatchObject({ kind: 'flow_error', code: 'UNKNOWN_TOOL' });
  });

  it('tells the model about invalid arguments once, and ends with flow_error INVALID_ARGUMENTS the second time in a row', async () => {
    const bad = { id: 'c1', name: 'book', arguments: '{"nom":"Ann"}' };
    const { llm, tools } = await setup([{ calls: [bad] }, { calls: [{ ...bad, id: 'c2' }] }]);
    const outcome = await runReply(input(llm, tools, hooks()));
    expect(outcome).toMatchObject({ kind: 'flow_error', code: 'INVALID_ARGUMENTS' });
    expect(sentBodies()[1]?.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'c1',
      content: "Invalid arguments for book: / must have required property 'name'",
    });
    expect(toolServer?.requests).toHaveLength(0);
  });

  it('ends with flow_error EMPTY_REPLY_LOOP after two empty replies in a row', async () => {
    const { llm, tools } = await setup(['', '']);
    expect(await runReply(input(llm, tools, hooks()))).toMatchObject({ kind: 'flow_error', code: 'EMPTY_REPLY_LOOP' });
    expect(model?.requests).toHaveLength(2);
  });

  it('allows at most five model requests per turn, the last one with tool_choice none', async () => {
    const calls = (i: number): Step => ({ calls: [{ id: `c${i}`, name: 'book', arguments: '{"name":"Ann"}' }] });
    const { llm, tools } = await setup([calls(1), calls(2), calls(3), calls(4), calls(5)]);
    const outcome = await runReply(input(llm, tools, hooks()));
    expect(outcome).toMatchObject({ kind: 'flow_error', code: 'TOOL_ROUNDS_EXCEEDED' });
    expect(sentBodies().map((b) => b.tool_choice)).toEqual(['auto', 'auto', 'auto', 'auto', 'none']);
  });

  it('aborts the whole turn at once with its signal', async () => {
    const { llm, tools } = await setup(['hang']);
    const controller = new AbortController();
    const waitForRequest = async (): Promise<void> => {
      while ((model?.requests.length ?? 0) === 0) await new Promise((r) => setTimeout(r, 1));
      controller.abort();
    };
    void waitForRequest();
    const outcome = await runReply(input(llm, tools, hooks(), { signal: controller.signal }));
    expect(outcome).toEqual({ kind: 'aborted', messages: [], partialText: '' });
    await expect(model?.requestSocketClosed(1)).resolves.toBeUndefined();
  });

  it('hands back the words said so far when a reply is aborted mid-stream (barge-in)', async () => {
    const { llm, tools } = await setup([]);
    await model?.close();
    model = await startServer((_req, res) => {
      sseHeaders(res);
      // The whole reply in one read, no end: the abort must stop it between tokens.
      res.write(
        replyStream('Your appointment is booked. See you').replace(
          /data: [^\n]*"finish_reason"[^\n]*\n\ndata: \[DONE\]\n\n$/,
          '',
        ),
      );
    });
    const controller = new AbortController();
    const h = hooks();
    const outcome = await runReply(
      input(
        { ...llm, base_url: model.url },
        tools,
        { ...h, onChunk: () => controller.abort() },
        { signal: controller.signal },
      ),
    );
    expect(outcome).toEqual({ kind: 'aborted', messages: [], partialText: 'Your appointment is booked. ' });
  });

  it('reports a model failure as llm_error with its code', async () => {
    const { llm, tools } = await setup([]);
    await model?.close();
    const outcome = await runReply(
      input(llm, tools, hooks(), { client: { dispatcher: testDispatcher, maxRetries: 0 } }),
    );
    expect(outcome.kind === 'llm_error' && outcome.error.code).toBe('LLM_NETWORK');
  });

  it('gives up a turn whose model never answers at the turn deadline with flow_error TURN_DEADLINE', async () => {
    const { llm, tools } = await setup(['hang']);
    const started = Date.now();
    const outcome = await runReply(
      input(llm, tools, hooks(), {
        turnDeadlineMs: 300,
        client: { dispatcher: testDispatcher, firstTokenTimeoutMs: 20_000 },
      }),
    );
    expect(outcome).toMatchObject({ kind: 'flow_error', code: 'TURN_DEADLINE' });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('does not count the time the caller spends hearing the reply against the turn deadline', async () => {
    const call = { id: 'call_1', name: 'book', arguments: '{"name":"Ann"}' };
    const { llm, tools } = await setup([
      { text: 'One moment while I book that for you.', calls: [call] },
      'You are booked.',
    ]);
    const h = hooks();
    const slowSpeech = {
      ...h,
      confirmSpoken: async () => new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 1_500)),
    };
    const outcome = await runReply(input(llm, tools, slowSpeech, { turnDeadlineMs: 1_000 }));
    expect(outcome.kind).toBe('reply');
  });
});

describe('turn runner with fallback models', () => {
  let backup: TestServer | undefined;
  afterEach(async () => {
    await backup?.close();
    backup = undefined;
  });

  /** The agent's model (`primary`'s server), then a backup that answers every request with `text`. */
  async function models(primary: LlmConfig, text = 'The backup here.') {
    backup = await startServer((_req, res) => {
      sseHeaders(res);
      res.end(replyStream(text));
    });
    const moves: string[] = [];
    const chain = new ProviderChain(
      'llm',
      [
        { name: 'primary', provider: primary },
        { name: 'backup', provider: { ...primary, base_url: backup.url, model: 'backup' } },
      ],
      (from, to, reason) => moves.push(`${from}->${to} ${reason}`),
    );
    return { chain, moves };
  }

  it('a model that answers an error status before its first token: the turn is asked of the next, which serves the rest of the call', async () => {
    model = await startServer((_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json' }).end('{}');
    });
    const primary: LlmConfig = { base_url: model.url, model: 'primary', temperature: 1, stream: true };
    const { chain, moves } = await models(primary);
    const { tools } = await setupTools();
    const h = hooks();
    expect(await runReply(input(primary, tools, h, { llm: chain.current, models: chain }))).toMatchObject({
      kind: 'reply',
      messages: [{ role: 'assistant', content: 'The backup here.' }],
    });
    // No retry on the failed model: the next one is the retry.
    expect(model.requests).toHaveLength(1);
    expect(moves).toEqual(['0->1 error']);
    await runReply(input(primary, tools, hooks(), { llm: chain.current, models: chain }));
    expect(model.requests).toHaveLength(1);
    expect(backup!.requests).toHaveLength(2);
    expect(JSON.parse(backup!.requests[0]!.body)).toMatchObject({ model: 'backup', messages: history });
  });

  it('a refused connection moves on as connect, a missing first token as timeout', async () => {
    const gone = await startServer(() => undefined);
    await gone.close();
    const refused: LlmConfig = { base_url: gone.url, model: 'primary', temperature: 1, stream: true };
    const first = await models(refused);
    const { tools } = await setupTools();
    expect(await runReply(input(refused, tools, hooks(), { models: first.chain }))).toMatchObject({ kind: 'reply' });
    expect(first.moves).toEqual(['0->1 connect']);
    await backup?.close();

    model = await startServer((_req, res) => sseHeaders(res));
    const silent: LlmConfig = { base_url: model.url, model: 'primary', temperature: 1, stream: true };
    const second = await models(silent);
    const outcome = await runReply(
      input(silent, tools, hooks(), {
        models: second.chain,
        client: { dispatcher: testDispatcher, firstTokenTimeoutMs: 100 },
      }),
    );
    expect(outcome).toMatchObject({ kind: 'reply' });
    expect(second.moves).toEqual(['0->1 timeout']);
  });

  it('a model that breaks off mid-reply moves the call on; the words already spoken stand as the reply', async () => {
    model = await startServer((_req, res) => {
      sseHeaders(res);
      res.write(chunk({ content: 'We open ' }));
      setTimeout(() => res.destroy(), 50);
    });
    const primary: LlmConfig = { base_url: model.url, model: 'primary', temperature: 1, stream: true };
    const { chain, moves } = await models(primary);
    const { tools } = await setupTools();
    const h = hooks();
    const outcome = await runReply(input(primary, tools, h, { models: chain }));
    expect(outcome).toMatchObject({ kind: 'reply', messages: [{ role: 'assistant', content: 'We open ' }] });
    expect(moves).toEqual(['0->1 error']);
    expect(backup!.requests).toHaveLength(0);
  });

  it('the last model fails the turn as one model does', async () => {
    model = await startServer((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{}');
    });
    const only: LlmConfig = { base_url: model.url, model: 'only', temperature: 1, stream: true };
    const chain = new ProviderChain('llm', [{ name: 'only', provider: only }]);
    const { tools } = await setupTools();
    expect(await runReply(input(only, tools, hooks(), { models: chain }))).toMatchObject({ kind: 'llm_error' });
  });
});

/** The tools of setup(), without its model server. */
async function setupTools(): Promise<{ tools: ToolExecutor }> {
  const saved = model;
  const { tools } = await setup([]);
  await model?.close();
  model = saved;
  return { tools };
}
