// Chat-completions client: one POST per model turn, streamed over SSE (or one JSON reply when
// the agent turns streaming off). Retries only before the first token: once words may have
// been spoken, a retry would repeat them, so the turn fails instead.
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { z } from 'zod';
import type { LlmConfig } from '../agents/schema.ts';
import { jitteredBackoff } from '../net/backoff.ts';
import { readTextCapped, sendRequest, type Dispatcher, type HttpResponse, type ResponseBody } from '../net/http.ts';
import { UpstreamError } from '../net/upstream-error.ts';
import { Watchdog, type WatchdogTimers } from '../net/watchdog.ts';
import { realTimers } from '../timers.ts';
import { LlmError } from './errors.ts';
import type { ChatRequest, LlmEvent, LlmTiming, LlmUsage, ToolCallRequest } from './types.ts';

export interface LlmClientOptions {
  /** Cancels the request at once (barge-in, hangup); the socket is released. */
  signal?: AbortSignal;
  /** From sending the request to the first token (or, without streaming, the whole reply). */
  firstTokenTimeoutMs?: number;
  /** Longest silence allowed between stream events once the reply has started. */
  stallTimeoutMs?: number;
  /** Extra attempts after the first, only while no token has arrived. */
  maxRetries?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** Clock for timing marks, in ms. */
  now?: () => number;
  timers?: WatchdogTimers;
  random?: () => number;
  /** The service's outbound dispatcher (net/http.ts OutboundHttp), for LLM_CLIENT_DEFAULTS.connectTimeoutMs. */
  dispatcher: Dispatcher;
}

export const LLM_CLIENT_DEFAULTS = {
  /** The connect timeout of the dispatcher the service gives the client. */
  connectTimeoutMs: 5_000,
  firstTokenTimeoutMs: 15_000,
  stallTimeoutMs: 10_000,
  maxRetries: 2,
  backoffBaseMs: 250,
  backoffMaxMs: 2_000,
  /** Bytes after [DONE] read in the background so the connection can be reused. */
  drainAfterDoneBytes: 16_384,
  drainAfterDoneMs: 1_000,
  /** Cap on one SSE event. */
  maxEventBytes: 1024 * 1024,
  /** Cap on a non-streamed reply. */
  maxJsonBytes: 4 * 1024 * 1024,
  /** Cap on one streamed reply's bytes on the wire (chunks, usage, keep-alives and all). */
  maxStreamBytes: 4 * 1024 * 1024,
  /** Cap on one reply's text: some twenty minutes of speech, far past any turn a caller listens to. */
  maxReplyChars: 32_000,
  /** Cap on the arguments of all tool calls in one reply together. */
  maxToolArgumentChars: 64_000,
} as const;

type Resolved = Required<Omit<LlmClientOptions, 'signal'>> & Pick<LlmClientOptions, 'signal'>;

function resolveOptions(o: LlmClientOptions): Resolved {
  return {
    signal: o.signal,
    firstTokenTimeoutMs: o.firstTokenTimeoutMs ?? LLM_CLIENT_DEFAULTS.firstTokenTimeoutMs,
    stallTimeoutMs: o.stallTimeoutMs ?? LLM_CLIENT_DEFAULTS.stallTimeoutMs,
    maxRetries: o.maxRetries ?? LLM_CLIENT_DEFAULTS.maxRetries,
    backoffBaseMs: o.backoffBaseMs ?? LLM_CLIENT_DEFAULTS.backoffBaseMs,
    backoffMaxMs: o.backoffMaxMs ?? LLM_CLIENT_DEFAULTS.backoffMaxMs,
    now: o.now ?? Date.now,
    timers: o.timers ?? realTimers,
    random: o.random ?? Math.random,
    dispatcher: o.dispatcher,
  };
}

// ---- wire schemas (edge validation) ----

const UsageSchema = z.object({ prompt_tokens: z.number(), completion_tokens: z.number(), total_tokens: z.number() });

const ToolCallDeltaSchema = z.object({
  index: z.int().min(0).max(127),
  id: z.string().nullish(),
  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
});

export const ChatChunkSchema = z.object({
  choices: z
    .array(
      z.object({
        index: z.int().min(0).optional(),
        delta: z
          .object({ content: z.string().nullish(), tool_calls: z.array(ToolCallDeltaSchema).nullish() })
          .nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .default([]),
  usage: UsageSchema.nullish(),
  // Some servers report a failure mid-stream as a chunk holding only `error`.
  error: z
    .object({ message: z.string().default('') })
    .loose()
    .nullish(),
});

export const ChatCompletionSchema = z.object({
  choices: z
    .array(
      z.object({
        index: z.int().min(0).optional(),
        message: z.object({
          content: z.string().nullish(),
          tool_calls: z
            .array(
              z.object({ id: z.string(), function: z.object({ name: z.string(), arguments: z.string().default('') }) }),
            )
            .nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: UsageSchema.nullish(),
});

export function buildRequestBody(llm: LlmConfig, req: ChatRequest): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: llm.model,
    messages: req.messages,
    temperature: llm.temperature,
    stream: llm.stream,
    metadata: req.metadata,
  };
  if (llm.max_tokens !== undefined) body.max_tokens = llm.max_tokens;
  // The usage chunk comes before [DONE]; servers that do not know the option ignore it or send none.
  if (llm.stream) body.stream_options = { include_usage: true };
  if (req.tools && req.tools.length > 0) {
    body.tools = req.tools;
    if (req.tool_choice !== undefined) body.tool_choice = req.tool_choice;
  }
  return body;
}

export function chatCompletionsUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/chat/completions`;
}

/** Accumulates streamed tool_call fragments by index: id and name first, argument pieces concatenated. */
export class ToolCallAccumulator {
  private readonly calls: { id: string; name: string; arguments: string }[] = [];
  /** Characters of arguments over every call so far. */
  argumentChars = 0;

  add(delta: z.infer<typeof ToolCallDeltaSchema>): void {
    let call = this.calls[delta.index];
    if (!call) {
      call = { id: '', name: '', arguments: '' };
      this.calls[delta.index] = call;
    }
    if (delta.id) call.id = delta.id;
    if (delta.function?.name && call.name === '') call.name = delta.function.name;
    if (delta.function?.arguments) {
      call.arguments += delta.function.arguments;
      this.argumentChars += delta.function.arguments.length;
    }
  }

  get size(): number {
    return this.calls.length;
  }

  /** Calls in index order; a call the server left without an id gets a stable one. */
  result(): ToolCallRequest[] {
    const out: ToolCallRequest[] = [];
    this.calls.forEach((c, i) => {
      if (c) out.push({ id: c.id || `call_${i}`, name: c.name, arguments: c.arguments });
    });
    return out;
  }
}

// ---- one attempt ----

interface AttemptState {
  gotFirstToken: boolean;
}

class Attempt {
  /** The first-token deadline, then the stall watch, and the caller's abort, as one signal. */
  readonly watch: Watchdog;

  constructor(o: Resolved) {
    this.watch = new Watchdog(o.timers, o.signal, () => new LlmError('LLM_ABORTED'));
  }

  arm(ms: number, code: 'LLM_FIRST_TOKEN_TIMEOUT' | 'LLM_STALLED'): void {
    this.watch.arm(ms, () => new LlmError(code, `${ms} ms`));
  }

  disarm(): void {
    this.watch.disarm();
  }

  close(): void {
    this.watch.close();
  }

  /** Turns whatever a failed await threw into a coded error, preferring the reason we aborted with. */
  fail(err: unknown): LlmError {
    const reason: unknown = this.watch.signal.reason;
    if (this.watch.signal.aborted && reason instanceof LlmError) return reason;
    if (err instanceof LlmError) return err;
    if (err instanceof UpstreamError) {
      const retryable = err.status === 408 || err.status === 429 || err.status >= 500;
      return new LlmError('LLM_HTTP_STATUS', err.message, { status: err.status, retryable });
    }
    const code = (err as { code?: unknown } | null)?.code;
    if (code === 'UND_ERR_CONNECT_TIMEOUT') return new LlmError('LLM_CONNECT_TIMEOUT', undefined, { cause: err });
    // Refused by the egress policy: trying again would be refused again.
    if (code === 'EGRESS_REFUSED')
      return new LlmError('LLM_NETWORK', (err as Error).message, { cause: err, retryable: false });
    return new LlmError('LLM_NETWORK', err instanceof Error ? err.message : String(err), { cause: err });
  }
}

async function open(llm: LlmConfig, req: ChatRequest, o: Resolved, attempt: Attempt): Promise<HttpResponse> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: llm.stream ? 'text/event-stream' : 'application/json',
  };
  if (llm.api_key) headers.authorization = `Bearer ${llm.api_key}`;
  // A failure answer comes back as UpstreamError (its body read to a cap), mapped by Attempt.fail.
  return sendRequest(chatCompletionsUrl(llm.base_url), {
    method: 'POST',
    headers,
    body: JSON.stringify(buildRequestBody(llm, req)),
    signal: attempt.watch.signal,
    dispatcher: o.dispatcher,
    upstreamErrors: true,
  });
}

/**
 * Bytes of an SSE chat-completions stream in, tokens and tool calls out. Kept apart from the
 * socket so every legal split of a stream can be checked directly, and the hot path benched.
 */
export class ChatStreamDecoder {
  /** Tokens decoded by the last feed/end; the caller drains it. */
  readonly tokens: string[] = [];
  readonly toolCalls = new ToolCallAccumulator();
  finishReason: string | null = null;
  usage: LlmUsage | null = null;
  /** Saw `data: [DONE]`: anything after it is ignored. */
  sawDone = false;
  /** Saw a token or a tool-call fragment. */
  started = false;
  /** A malformed or error chunk: tokens before it are still delivered, then this is thrown. */
  failure: LlmError | null = null;
  private readonly pending: string[] = [];
  private bytes = 0;
  private replyChars = 0;
  private readonly decoder = new TextDecoder('utf-8');
  private readonly parser = createParser({
    onEvent: (ev: EventSourceMessage) => this.pending.push(ev.data),
    onError: (err) => {
      // Only the buffer cap matters here: a line with no end would grow memory without bound.
      if (err.type === 'max-buffer-size-exceeded')
        this.failure ??= new LlmError('LLM_BAD_CHUNK', 'event larger than the cap');
    },
    maxBufferSize: LLM_CLIENT_DEFAULTS.maxEventBytes,
  });

  feed(bytes: Uint8Array): void {
    if (this.sawDone || this.failure) return;
    this.bytes += bytes.length;
    if (this.bytes > LLM_CLIENT_DEFAULTS.maxStreamBytes) {
      this.failure = new LlmError('LLM_REPLY_TOO_LARGE', `stream over ${LLM_CLIENT_DEFAULTS.maxStreamBytes} bytes`);
      return;
    }
    this.parser.feed(this.decoder.decode(bytes, { stream: true }));
    if (!this.failure) this.drain();
  }

  /** The server closed the stream. */
  end(): void {
    if (this.sawDone || this.failure) return;
    this.parser.feed(this.decoder.decode());
    // A last event without its blank line still counts: nothing more will come.
    this.parser.reset({ consume: true });
    this.drain();
  }

  private drain(): void {
    const pending = this.pending;
    for (let i = 0; i < pending.length && !this.sawDone; i++) {
      const data = pending[i] as string;
      if (data === '[DONE]') {
        this.sawDone = true;
        break;
      }
      let json: unknown;
      try {
        json = JSON.parse(data);
      } catch {
        this.failure = new LlmError('LLM_BAD_CHUNK', `not JSON: ${data.slice(0, 80)}`);
        break;
      }
      const parsed = ChatChunkSchema.safeParse(json);
      if (!parsed.success) {
        this.failure = new LlmError('LLM_BAD_CHUNK', parsed.error.issues[0]?.message);
        break;
      }
      const chunk = parsed.data;
      if (chunk.error) {
        this.failure = new LlmError('LLM_STREAM_ERROR', chunk.error.message);
        break;
      }
      if (chunk.usage) this.usage = chunk.usage;
      for (const choice of chunk.choices) {
        if (choice.index !== undefined && choice.index !== 0) continue;
        const delta = choice.delta;
        if (delta?.tool_calls && delta.tool_calls.length > 0) {
          this.started = true;
          for (const tc of delta.tool_calls) this.toolCalls.add(tc);
          if (this.toolCalls.argumentChars > LLM_CLIENT_DEFAULTS.maxToolArgumentChars) {
            this.failure = new LlmError(
              'LLM_REPLY_TOO_LARGE',
              `tool arguments over ${LLM_CLIENT_DEFAULTS.maxToolArgumentChars} characters`,
            );
            break;
          }
        }
        if (delta?.content) {
          this.started = true;
          this.replyChars += delta.content.length;
          if (this.replyChars > LLM_CLIENT_DEFAULTS.maxReplyChars) {
            this.failure = new LlmError(
              'LLM_REPLY_TOO_LARGE',
              `reply over ${LLM_CLIENT_DEFAULTS.maxReplyChars} characters`,
            );
            break;
          }
          this.tokens.push(delta.content);
        }
        if (choice.finish_reason) this.finishReason = choice.finish_reason;
      }
      if (this.failure) break;
    }
    pending.length = 0;
  }
}

/**
 * After [DONE] the server normally ends the response at once; reading that end in the
 * background keeps the connection (and its TLS session) for the next turn. A server that keeps
 * talking or never ends loses the connection instead.
 */
function drainForReuse(body: ResponseBody, o: Resolved): void {
  const controller = new AbortController();
  const timer = o.timers.setTimeout(() => controller.abort(), LLM_CLIENT_DEFAULTS.drainAfterDoneMs);
  body
    .dump({ limit: LLM_CLIENT_DEFAULTS.drainAfterDoneBytes, signal: controller.signal })
    .catch(() => undefined)
    .finally(() => o.timers.clearTimeout(timer));
}

async function* streamAttempt(
  llm: LlmConfig,
  req: ChatRequest,
  o: Resolved,
  state: AttemptState,
  attemptNo: number,
): AsyncGenerator<LlmEvent> {
  const attempt = new Attempt(o);
  const requestSentAt = o.now();
  let firstTokenAt: number | null = null;
  attempt.arm(o.firstTokenTimeoutMs, 'LLM_FIRST_TOKEN_TIMEOUT');
  let res: HttpResponse | undefined;
  let finished = false;
  try {
    res = await open(llm, req, o, attempt);
    const decoder = new ChatStreamDecoder();
    const iterator = res.body[Symbol.asyncIterator]();
    for (;;) {
      // The stall timer runs only while we wait on the server, never while the consumer holds a token.
      if (state.gotFirstToken) attempt.arm(o.stallTimeoutMs, 'LLM_STALLED');
      const next = (await iterator.next()) as IteratorResult<Buffer>;
      if (state.gotFirstToken) attempt.disarm();
      if (next.done) decoder.end();
      else decoder.feed(next.value);
      if (decoder.started && !state.gotFirstToken) {
        state.gotFirstToken = true;
        firstTokenAt = o.now();
        attempt.disarm();
      }
      const tokens = decoder.tokens;
      for (let i = 0; i < tokens.length; i++) {
        // A consumer that aborted while holding a token gets nothing more from this read.
        if (attempt.watch.signal.aborted) throw attempt.fail(null);
        yield { type: 'token', text: tokens[i] as string };
      }
      tokens.length = 0;
      if (decoder.failure) throw decoder.failure;
      if (next.done || decoder.sawDone) break;
    }
    if (decoder.toolCalls.size > 0) yield { type: 'tool_calls', calls: decoder.toolCalls.result() };
    const timing: LlmTiming = { requestSentAt, firstTokenAt, endedAt: o.now(), attempts: attemptNo };
    finished = true;
    yield { type: 'done', finishReason: decoder.finishReason, usage: decoder.usage, timing };
  } catch (err) {
    throw attempt.fail(err);
  } finally {
    attempt.close();
    if (res && !res.body.destroyed) {
      if (finished) drainForReuse(res.body, o);
      // Early exit, error or abort: drop the body so the connection closes now.
      else res.body.destroy();
    }
  }
}

async function* jsonAttempt(
  llm: LlmConfig,
  req: ChatRequest,
  o: Resolved,
  state: AttemptState,
  attemptNo: number,
): AsyncGenerator<LlmEvent> {
  const attempt = new Attempt(o);
  const requestSentAt = o.now();
  attempt.arm(o.firstTokenTimeoutMs, 'LLM_FIRST_TOKEN_TIMEOUT');
  let res: HttpResponse | undefined;
  let events: LlmEvent[];
  try {
    res = await open(llm, req, o, attempt);
    const text = await readTextCapped(res.body, LLM_CLIENT_DEFAULTS.maxJsonBytes);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new LlmError('LLM_BAD_RESPONSE', 'not JSON');
    }
    const parsed = ChatCompletionSchema.safeParse(json);
    if (!parsed.success) throw new LlmError('LLM_BAD_RESPONSE', parsed.error.issues[0]?.message);
    const choice = parsed.data.choices.find((c) => (c.index ?? 0) === 0) ?? parsed.data.choices[0];
    const message = choice?.message;
    if ((message?.content?.length ?? 0) > LLM_CLIENT_DEFAULTS.maxReplyChars)
      throw new LlmError('LLM_REPLY_TOO_LARGE', `reply over ${LLM_CLIENT_DEFAULTS.maxReplyChars} characters`);
    const argumentChars = (message?.tool_calls ?? []).reduce((sum, c) => sum + c.function.arguments.length, 0);
    if (argumentChars > LLM_CLIENT_DEFAULTS.maxToolArgumentChars)
      throw new LlmError(
        'LLM_REPLY_TOO_LARGE',
        `tool arguments over ${LLM_CLIENT_DEFAULTS.maxToolArgumentChars} characters`,
      );
    state.gotFirstToken = true;
    const firstTokenAt = o.now();
    events = [];
    if (message?.content) events.push({ type: 'token', text: message.content });
    if (message?.tool_calls && message.tool_calls.length > 0) {
      events.push({
        type: 'tool_calls',
        calls: message.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
      });
    }
    events.push({
      type: 'done',
      finishReason: choice?.finish_reason ?? null,
      usage: parsed.data.usage ?? null,
      timing: { requestSentAt, firstTokenAt, endedAt: firstTokenAt, attempts: attemptNo },
    });
  } catch (err) {
    throw attempt.fail(err);
  } finally {
    attempt.close();
    if (res && !res.body.destroyed) res.body.destroy();
  }
  yield* events;
}

function sleep(ms: number, o: Resolved): Promise<void> {
  return new Promise((resolve, reject) => {
    const signal = o.signal;
    if (signal?.aborted) return reject(new LlmError('LLM_ABORTED'));
    const onAbort = (): void => {
      o.timers.clearTimeout(handle);
      reject(new LlmError('LLM_ABORTED'));
    };
    const handle = o.timers.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The service's jittered backoff (net/backoff.ts), doubling from `baseMs`. */
export function backoffDelay(retry: number, baseMs: number, maxMs: number, random: () => number): number {
  return jitteredBackoff(retry, { baseMs, maxMs, factor: 2 }, random);
}

/**
 * One model turn. Yields tokens as they arrive, then the tool calls (if any), then `done`.
 * Throws LlmError. Uses SSE unless `llm.stream` is false.
 */
export async function* streamChat(
  llm: LlmConfig,
  req: ChatRequest,
  options: LlmClientOptions,
): AsyncGenerator<LlmEvent> {
  const o = resolveOptions(options);
  const state: AttemptState = { gotFirstToken: false };
  for (let attemptNo = 1; ; attemptNo++) {
    if (o.signal?.aborted) throw new LlmError('LLM_ABORTED');
    try {
      yield* (llm.stream ? streamAttempt : jsonAttempt)(llm, req, o, state, attemptNo);
      return;
    } catch (err) {
      const e = err instanceof LlmError ? err : new LlmError('LLM_NETWORK', String(err), { cause: err });
      if (state.gotFirstToken || !e.retryable || attemptNo > o.maxRetries || o.signal?.aborted) throw e;
      await sleep(backoffDelay(attemptNo, o.backoffBaseMs, o.backoffMaxMs, o.random), o);
    }
  }
}

export interface ChatResult {
  content: string;
  toolCalls: ToolCallRequest[];
  finishReason: string | null;
  usage: LlmUsage | null;
  timing: LlmTiming;
}

/** The whole reply at once (analysis, tests); honours `llm.stream` on the wire. */
export async function completeChat(llm: LlmConfig, req: ChatRequest, options: LlmClientOptions): Promise<ChatResult> {
  let content = '';
  let toolCalls: ToolCallRequest[] = [];
  for await (const ev of streamChat(llm, req, options)) {
    if (ev.type === 'token') content += ev.text;
    else if (ev.type === 'tool_calls') toolCalls = ev.calls;
    else return { content, toolCalls, finishReason: ev.finishReason, usage: ev.usage, timing: ev.timing };
  }
  throw new LlmError('LLM_BAD_RESPONSE', 'reply ended without a result');
}
