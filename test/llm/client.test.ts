import { afterEach, describe, expect, it, vi } from 'vitest';
import { Agent, errors as undiciErrors } from 'undici';
import type { LlmConfig } from '../../src/agents/schema.ts';
import {
  backoffDelay,
  ChatStreamDecoder,
  completeChat,
  LLM_CLIENT_DEFAULTS,
  streamChat,
  type LlmClientOptions,
} from '../../src/llm/client.ts';
import { isLlmError, LlmError } from '../../src/llm/errors.ts';
import type { ChatRequest, LlmEvent } from '../../src/llm/types.ts';
import {
  chunk,
  sseHeaders,
  startServer,
  tokenStream,
  writeInPieces,
  type Handler,
  type TestServer,
} from '../support/http-server.ts';
import { testDispatcher } from '../support/outbound.ts';
import type { TimerHandle } from '../../src/timers.ts';

const request: ChatRequest = {
  messages: [
    { role: 'system', content: 'You are a test.' },
    { role: 'user', content: 'Hi' },
  ],
  metadata: {
    call_id: 'call_1',
    agent_id: 'agent_1',
    agent_version: 3,
    call_type: 'web',
    call_from: null,
    call_to: null,
    metadata: { crm: 'x' },
    dynamic_variables: { name: 'Ann' },
  },
};

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(handler: Handler): Promise<LlmConfig> {
  server = await startServer(handler);
  return { base_url: `${server.url}/v1`, model: 'test-model', temperature: 1, stream: true };
}

const fast: LlmClientOptions = {
  dispatcher: testDispatcher,
  backoffBaseMs: 1,
  backoffMaxMs: 2,
  firstTokenTimeoutMs: 2_000,
  stallTimeoutMs: 2_000,
};

async function collect(llm: LlmConfig, opts: LlmClientOptions = fast, req: ChatRequest = request): Promise<LlmEvent[]> {
  const out: LlmEvent[] = [];
  for await (const ev of streamChat(llm, req, opts)) out.push(ev);
  return out;
}

function text(events: LlmEvent[]): string {
  return events.map((e) => (e.type === 'token' ? e.text : '')).join('');
}

async function failure(p: Promise<unknown>): Promise<LlmError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof LlmError) return err;
    throw err;
  }
  throw new Error('expected an LlmError');
}

describe('LLM client: request', () => {
  it('posts model, messages, temperature, max_tokens, stream (asking for usage), tools, tool_choice and metadata with a bearer key', async () => {
    const llm = await serve((_req, res) => {
      sseHeaders(res);
      res.end(tokenStream(['ok']));
    });
    const tools = [
      {
        type: 'function' as const,
        function: { name: 'f', description: 'd', parameters: { type: 'object', properties: {} } },
      },
    ];
    await collect({ ...llm, api_key: 'sk-test', max_tokens: 50, temperature: 0.2 }, fast, {
      ...request,
      tools,
      tool_choice: 'auto',
    });
    const sent = server?.requests[0];
    expect(sent?.url).toBe('/v1/chat/completions');
    expect(sent?.headers.authorization).toBe('Bearer sk-test');
    expect(JSON.parse(sent?.body ?? '')).toEqual({
      model: 'test-model',
      messages: request.messages,
      temperature: 0.2,
      max_tokens: 50,
      stream: true,
      stream_options: { include_usage: true },
      tools,
      tool_choice: 'auto',
      metadata: request.metadata,
    });
  });

  it('sends no authorization header when the agent has no api key', async () => {
    const llm = await serve((_req, res) => {
      sseHeaders(res);
      res.end(tokenStream(['ok']));
    });
    await collect(llm);
    expect(server?.requests[0]?.headers.authorization).toBeUndefined();
  });
});

describe('LLM client: legal SSE streams', () => {
  it('yields tokens in order, then done with the finish reason and timing marks', async () => {
    const llm = await serve((_req, res) => {
      sseHeaders(res);
      res.end(tokenStream(['Hel', 'lo', ' there.']));
    });
    let t = 100;
    const events = await collect(llm, { ...fast, now: () => (t += 10) });
    expect(events.filter((e) => e.type === 'token').map((e) => (e.type === 'token' ? e.text : ''))).toEqual([
      'Hel',
      'lo',
      ' there.',
    ]);
    const done = events.at(-1);
    expect(done).toEqual({
      type: 'done',
      finishReason: 'stop',
      usage: null,
      timing: { requestSentAt: 110, firstTokenAt: 120, endedAt: 130, attempts: 1 },
    });
  });

  it('decodes the same reply whichever byte the stream is split at, including inside a UTF-8 character', () => {
    const stream = Buffer.from(': keep-alive\r\n\r\n' + tokenStream(['Grüße, ', '日本 ', '€5 😀'], '\r\n'), 'utf8');
    for (let cut = 1; cut < stream.length; cut++) {
      const d = new ChatStreamDecoder();
      d.feed(stream.subarray(0, cut));
      d.feed(stream.subarray(cut));
      d.end();
      expect(d.tokens.join(''), `cut at ${cut}`).toBe('Grüße, 日本 €5 😀');
      expect(d.sawDone).toBe(true);
    }
  });

  it('decodes a stream sent in 3-byte reads over a real socket, splitting multi-byte characters', async () => {
    const llm = await serve(async (_req, res) => {
      sseHeaders(res);
      await writeInPieces(res, tokenStream(['Ça ', 'coûte ', '€3.'], '\n'), 3);
      res.end();
    });
    expect(text(await collect(llm))).toBe('Ça coûte €3.');
  });

  it('fails an event that grows past the size cap with LLM_BAD_CHUNK instead of buffering without bound', () => {
    const d = new ChatStreamDecoder();
    const piece = Buffer.alloc(64 * 1024, 'a');
    d.feed(Buffer.from('data: '));
    for (let i = 0; i < 20 && !d.failure; i++) d.feed(piece);
    expect(d.failure?.code).toBe('LLM_BAD_CHUNK');
  });

  it('fails a reply whose text grows past the cap with LLM_REPLY_TOO_LARGE, over a real socket, and closes the stream', async () => {
    let closed = false;
    const llm = await serve((req, res) => {
      sseHeaders(res);
      req.socket.on('close', () => (closed = true));
      const word = 'word '.repeat(200);
      // An endless reply: the service must stop reading it, not keep it.
      const timer = setInterval(() => res.write(chunk({ content: word })), 1);
      res.on('close', () => clearInterval(timer));
    });
    const seen: string[] = [];
    const error = await failure(
      (async () => {
        for await (const ev of streamChat(llm, request, fast)) if (ev.type === 'token') seen.push(ev.text);
      })(),
    );
    expect(error.code).toBe('LLM_REPLY_TOO_LARGE');
    expect(seen.join('').length).toBeLessThanOrEqual(LLM_CLIENT_DEFAULTS.maxReplyChars);
    await vi.waitFor(() => expect(closed).toBe(true));
  });

  it('fails tool calls whose arguments together pass the cap with LLM_REPLY_TOO_LARGE', () => {
    const d = new ChatStreamDecoder();
    const piece = 'x'.repeat(1000);
    d.feed(
      Buffer.from(
        chunk({ tool_calls: [{ index: 0, id: 'c', type: 'function', function: { name: 'f', arguments: '' } }] }),
      ),
    );
    for (let i = 0; i < 70 && !d.failure; i++)
      d.feed(Buffer.from(chunk({ tool_calls: [{ index: i % 3, function: { arguments: piece } }] })));
    expect(d.failure?.code).toBe('LLM_REPLY_TOO_LARGE');
    expect(d.toolCalls.argumentChars).toBeLessThanOrEqual(LLM_CLIENT_DEFAULTS.maxToolArgumentChars + piece.length);
  });

  it('fails a stream that sends more bytes than the cap, even with no text, with LLM_REPLY_TOO_LARGE', () => {
    const d = new ChatStreamDecoder();
    const keepAlive = Buffer.from(': keep-alive\n\n'.repeat(4096));
    for (let i = 0; i < 200 && !d.failure; i++) d.feed(keepAlive);
    expect(d.failure?.code).toBe('LLM_REPLY_TOO_LARGE');
  });

  it('accepts CRLF lines, comments, keep-alives, chunks without role and a usage chunk with empty choices', async () => {
    const llm = await serve((_req, res) => {
      sseHeaders(res);
      const usage = {
        id: 'c1',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'm',
        choices: [],
        usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
      };
      res.end(
        ': OPENROUTER PROCESSING\r\n\r\n' +
          chunk({ content: 'One' }, null, '\r\n') +
          ':\r\n\r\n' +
          chunk({ content: ' two' }, null, '\r\n') +
          chunk({}, 'stop', '\r\n') +
          `data: ${JSON.stringify(usage)}\r\n\r\n` +
          'data: [DONE]\r\n\r\n',
      );
    });
    const events = await collect(llm);
    expect(text(events)).toBe('One two');
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      finishReason: 'stop',
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
    });
  });

  it('ends normally when the server closes without [DONE]', async () => {
    const llm = await serve((_req, res) => {
      sseHeaders(res);
      res.end(chunk({ content: 'Bye' }) + chunk({}, 'stop'));
    });
    const events = await collect(llm);
    expect(text(events)).toBe('Bye');
    expect(events.at(-1)).toMatchObject({ type: 'done', finishReason: 'stop' });
  });

  it('stops at [DONE] and ignores trailing bytes, even when the server keeps the connection open', async () => {
    const llm = await serve((_req, res) => {
      sseHeaders(res);
      res.write(tokenStream(['Done.']) + 'data: {not json\n\ngarbage');
    });
    const events = await collect(llm);
    expect(text(events)).toBe('Done.');
    expect(events.at(-1)).toMatchObject({ type: 'done', finishReason: 'stop' });
  });

  it('accumulates tool_call fragments by index into several complete calls', async () => {
    const llm = await serve((_req, res) => {
      sseHeaders(res);
      res.end(
        chunk({ role: 'assistant', content: 'Checking.' }) +
          chunk({
            tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'lookup', arguments: '' } }],
          }) +
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"q":' } }] }) +
          chunk({
            tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'book', arguments: '{"at"' } }],
          }) +
          chunk({ tool_calls: [{ index: 0, function: { arguments: '"x"}' } }] }) +
          chunk({ tool_calls: [{ index: 1, function: { arguments: ':"9am"}' } }] }) +
          chunk({}, 'tool_calls') +
          'data: [DONE]\n\n',
      );
    });
    const events = await collect(llm);
    expect(text(events)).toBe('Checking.');
    expect(events.find((e) => e.type === 'tool_calls')).toEqual({
      type: 'tool_calls',
      calls: [
        { id: 'call_a', name: 'lookup', arguments: '{"q":"x"}' },
        { id: 'call_b', name: 'book', arguments: '{"at":"9am"}' },
      ],
    });
    expect(events.at(-1)).toMatchObject({ type: 'done', finishReason: 'tool_calls' });
  });
});

describe('LLM client: stream false', () => {
  it('reads one chat.completion JSON object with content and tool calls', async () => {
    const llm = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'x',
          object: 'chat.completion',
          created: 1,
          model: 'm',
          choices: [
            {
              index: 0,
              finish_reason: 'tool_calls',
              message: {
                role: 'assistant',
                content: 'Sure.',
                tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }],
              },
            },
          ],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
    const result = await completeChat({ ...llm, stream: false }, request, fast);
    expect(JSON.parse(server?.requests[0]?.body ?? '').stream).toBe(false);
    expect(result).toMatchObject({
      content: 'Sure.',
      toolCalls: [{ id: 'call_1', name: 'f', arguments: '{}' }],
      finishReason: 'tool_calls',
    });
  });

  it('rejects a non-streamed reply whose text or tool arguments pass the caps as LLM_REPLY_TOO_LARGE', async () => {
    let body = {};
    const llm = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    });
    const completion = (message: Record<string, unknown>) => ({
      id: 'x',
      object: 'chat.completion',
      created: 1,
      model: 'm',
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', ...message } }],
    });
    body = completion({ content: 'x'.repeat(LLM_CLIENT_DEFAULTS.maxReplyChars + 1) });
    expect((await failure(completeChat({ ...llm, stream: false }, request, fast))).code).toBe('LLM_REPLY_TOO_LARGE');
    body = completion({
      content: null,
      tool_calls: [
        {
          id: 'c',
          type: 'function',
          function: { name: 'f', arguments: 'x'.repeat(LLM_CLIENT_DEFAULTS.maxToolArgumentChars + 1) },
        },
      ],
    });
    expect((await failure(completeChat({ ...llm, stream: false }, request, fast))).code).toBe('LLM_REPLY_TOO_LARGE');
  });

  it('rejects a non-streamed reply that is not a chat completion as LLM_BAD_RESPONSE', async () => {
    const llm = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"choices":[]}');
    });
    expect((await failure(completeChat({ ...llm, stream: false }, request, fast))).code).toBe('LLM_BAD_RESPONSE');
  });
});

describe('LLM client: faults', () => {
  it('fails with LLM_HTTP_STATUS and the body message on a 4xx, without retrying', async () => {
    const llm = await serve((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'model not found', type: 'invalid_request_error' } }));
    });
    const err = await failure(collect(llm));
    expect(err.code).toBe('LLM_HTTP_STATUS');
    expect(err.status).toBe(400);
    expect(err.message).toContain('model not found');
    expect(server?.requests).toHaveLength(1);
  });

  it('retries a 5xx before the first token, then succeeds', async () => {
    const llm = await serve((_req, res, _body, n) => {
      if (n < 3) {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'overloaded', details: 'try later' }));
        return;
      }
      sseHeaders(res);
      res.end(tokenStream(['third time']));
    });
    const events = await collect(llm);
    expect(text(events)).toBe('third time');
    expect(events.at(-1)).toMatchObject({ type: 'done', timing: { attempts: 3 } });
    expect(server?.requests).toHaveLength(3);
  });

  it('waits a capped, jittered backoff between attempts, from the injected timers and randomness', async () => {
    const llm = await serve((_req, res) => {
      res.writeHead(503);
      res.end('busy');
    });
    const waits: number[] = [];
    // Run backoff sleeps at once and record them; never fire the long first-token guard.
    const timers = {
      setTimeout: (fn: () => void, ms: number): TimerHandle => {
        if (ms !== 60_000) {
          waits.push(ms);
          setImmediate(fn);
        }
        return { id: waits.length };
      },
      clearTimeout: (): void => undefined,
    };
    const err = await failure(
      collect(llm, {
        dispatcher: testDispatcher,
        timers,
        random: () => 0,
        backoffBaseMs: 250,
        backoffMaxMs: 600,
        maxRetries: 3,
        firstTokenTimeoutMs: 60_000,
      }),
    );
    expect(err.code).toBe('LLM_HTTP_STATUS');
    expect(waits).toEqual([125, 250, 300]);
    expect(server?.requests).toHaveLength(4);
  });

  it('gives up after the retries with the last error', async () => {
    const llm = await serve((_req, res) => {
      res.writeHead(502);
      res.end('bad gateway');
    });
    const err = await failure(collect(llm, { ...fast, maxRetries: 1 }));
    expect(err.code).toBe('LLM_HTTP_STATUS');
    expect(err.message).toContain('bad gateway');
    expect(server?.requests).toHaveLength(2);
  });

  it('times out a server that accepts and never answers with LLM_FIRST_TOKEN_TIMEOUT, retrying each time', async () => {
    const llm = await serve(() => undefined);
    const err = await failure(collect(llm, { ...fast, firstTokenTimeoutMs: 80, maxRetries: 2 }));
    expect(err.code).toBe('LLM_FIRST_TOKEN_TIMEOUT');
    expect(server?.requests).toHaveLength(3);
  });

  it('fails a stream that stalls after its first token with LLM_STALLED and never retries', async () => {
    const llm = await serve((_req, res) => {
      sseHeaders(res);
      res.write(chunk({ content: 'Well' }));
    });
    const tokens: string[] = [];
    const run = async (): Promise<void> => {
      for await (const ev of streamChat(llm, request, { ...fast, stallTimeoutMs: 40 }))
        if (ev.type === 'token') tokens.push(ev.text);
    };
    expect((await failure(run())).code).toBe('LLM_STALLED');
    expect(tokens).toEqual(['Well']);
    expect(server?.requests).toHaveLength(1);
  });

  it('fails a malformed chunk with LLM_BAD_CHUNK', async () => {
    const llm = await serve((_req, res) => {
      sseHeaders(res);
      res.end(chunk({ content: 'a' }) + 'data: {"choices":[{"delta":\n\n');
    });
    expect((await failure(collect(llm))).code).toBe('LLM_BAD_CHUNK');
  });

  it('fails a chunk of the wrong shape with LLM_BAD_CHUNK', async () => {
    const llm = await serve((_req, res) => {
      sseHeaders(res);
      res.end('data: {"choices":[{"delta":{"content":5}}]}\n\n');
    });
    expect((await failure(collect(llm))).code).toBe('LLM_BAD_CHUNK');
  });

  it('fails with LLM_STREAM_ERROR when the stream reports an error mid-reply, without retrying', async () => {
    const llm = await serve((_req, res) => {
      sseHeaders(res);
      res.end(chunk({ content: 'Hm' }) + 'data: {"error":{"message":"upstream overloaded","code":529}}\n\n');
    });
    const err = await failure(collect(llm));
    expect(err.code).toBe('LLM_STREAM_ERROR');
    expect(err.message).toContain('upstream overloaded');
    expect(server?.requests).toHaveLength(1);
  });

  it('retries a refused connection as LLM_NETWORK', async () => {
    const llm = await serve(() => undefined);
    await server?.close();
    const err = await failure(collect(llm, { ...fast, maxRetries: 1 }));
    expect(err.code).toBe('LLM_NETWORK');
  });

  it('maps a connect timeout to LLM_CONNECT_TIMEOUT and retries it', async () => {
    let connects = 0;
    const dispatcher = new Agent({
      connect: (_opts, cb) => {
        connects++;
        cb(new undiciErrors.ConnectTimeoutError(), null);
      },
    });
    const llm: LlmConfig = { base_url: 'http://127.0.0.1:9/v1', model: 'm', temperature: 1, stream: true };
    const err = await failure(collect(llm, { ...fast, dispatcher, maxRetries: 2 }));
    expect(err.code).toBe('LLM_CONNECT_TIMEOUT');
    expect(connects).toBe(3);
    await dispatcher.close();
  });
});

describe('LLM client: cancellation', () => {
  it('aborts mid-reply at once with LLM_ABORTED and the server sees the connection close', async () => {
    const llm = await serve((_req, res) => {
      sseHeaders(res);
      res.write(chunk({ content: 'Let me' }));
    });
    const controller = new AbortController();
    const run = async (): Promise<void> => {
      for await (const ev of streamChat(llm, request, { ...fast, signal: controller.signal })) {
        if (ev.type === 'token') controller.abort();
      }
    };
    const err = await failure(run());
    expect(isLlmError(err, 'LLM_ABORTED')).toBe(true);
    await expect(server?.requestSocketClosed(1)).resolves.toBeUndefined();
  });

  it('aborts while waiting for the first token without retrying', async () => {
    const controller = new AbortController();
    const llm = await serve(() => controller.abort()); // cancelled once the request is in flight
    const err = await failure(collect(llm, { ...fast, signal: controller.signal }));
    expect(err.code).toBe('LLM_ABORTED');
    await expect(server?.requestSocketClosed(1)).resolves.toBeUndefined();
    expect(server?.requests).toHaveLength(1);
  });

  it('releases the connection when the consumer stops reading early', async () => {
    const llm = await serve((_req, res) => {
      sseHeaders(res);
      res.write(chunk({ content: 'first' }));
    });
    for await (const ev of streamChat(llm, request, fast)) if (ev.type === 'token') break;
    await expect(server?.requestSocketClosed(1)).resolves.toBeUndefined();
  });
});

describe('LLM client: connection reuse', () => {
  it('keeps the connection for the next turn when the response ends just after [DONE]', async () => {
    const llm = await serve((_req, res) => {
      sseHeaders(res);
      res.write(tokenStream(['Hi.']));
      setTimeout(() => res.end(), 5);
    });
    // One connection per origin: the second request waits for the first's connection to be free or gone.
    const dispatcher = new Agent({ connections: 1 });
    await collect(llm, { ...fast, dispatcher });
    await collect(llm, { ...fast, dispatcher });
    expect(server?.requests).toHaveLength(2);
    expect(server?.requests[1]?.remotePort).toBe(server?.requests[0]?.remotePort);
    await dispatcher.close();
  });
});

describe('LLM client: backoff', () => {
  it('grows exponentially, is capped, and is jittered within half to all of the step', () => {
    expect(backoffDelay(1, 250, 2000, () => 1)).toBe(250);
    expect(backoffDelay(1, 250, 2000, () => 0)).toBe(125);
    expect(backoffDelay(3, 250, 2000, () => 1)).toBe(1000);
    expect(backoffDelay(10, 250, 2000, () => 1)).toBe(2000);
    expect(backoffDelay(10, 250, 2000, () => 0)).toBe(1000);
  });
});
