// The model's reply to one user turn: model reply → speakable chunks → tool calls → model again
// with the results, up to a few rounds. Tools run only after the caller confirms the reply text
// before them was spoken, so a reply cut off by barge-in never acts; press_digits plays its keys
// through a hook; built-in end_call / transfer_call are reported to the caller (the session acts
// on them), never run here. What each kind of tool does is its handler's (tool-handlers.ts).
import type { LlmConfig } from '../../agents/schema.ts';
import { streamChat, type LlmClientOptions } from '../../llm/client.ts';
import { LlmError } from '../../llm/errors.ts';
import { SpeakableChunker, type SpeakableOptions } from '../../llm/speakable.ts';
import type { ChatMessage, LlmRequestMetadata, LlmTiming, LlmUsage, ToolCallRequest } from '../../llm/types.ts';
import type { ToolExecutor, ToolRun } from '../../tools/executor.ts';
import type { ToolTranscriptItem } from '../../tools/transcript.ts';
import { realTimers, type TimerHandle, type Timers } from '../../timers.ts';
import { FALLBACK_DEFAULTS, type FallbackReason, type ProviderChain } from '../providers.ts';
import { toolAction, type ToolRound } from './tool-handlers.ts';

export const REPLY_DEFAULTS = {
  /** Model requests per user turn; the last one may not call tools. */
  maxRounds: 5,
  /** Consecutive rounds with invalid tool arguments that end the call. */
  maxInvalidArgumentRounds: 2,
  /** Consecutive empty replies that end the call. */
  maxEmptyReplies: 2,
  /**
   * Time the model and tools may work on one turn, all rounds together (time the caller spends
   * hearing the reply does not count): past it the turn is given up rather than left hanging.
   */
  turnDeadlineMs: 60_000,
  /** Tools still working this long after they started: the caller hears a line, once a turn, not dead air. */
  toolWaitMs: 1_000,
  /** That line, unless a tool gives its own `execution_message`. */
  toolWaitLine: 'One moment, please.',
} as const;

export type FlowErrorCode =
  'UNKNOWN_TOOL' | 'INVALID_ARGUMENTS' | 'EMPTY_REPLY_LOOP' | 'TOOL_ROUNDS_EXCEEDED' | 'TURN_DEADLINE';

export interface ReplyHooks {
  /** A piece of the reply is ready for speech (trimmed; join pieces with a space). */
  onChunk?(text: string): void;
  /** A speech-to-speech model's audio at the line's rate, and the words it says, as they stream. */
  onAudio?(samples: Int16Array): void;
  onWords?(delta: string): void;
  /** The model's speech so far is one utterance: what comes next starts another. */
  closeSpeech?(): void;
  /** How much of the reply's last utterance has played (ms): what the caller heard of it when they cut in. */
  playedMs?(): number;
  /** Timing of each model request; `firstChunkAt` gives latency.llm_speakable. */
  onLlmTiming?(timing: LlmTiming & { firstChunkAt: number | null }): void;
  /** Token counts of one model request, when the server reported them. */
  onUsage?(usage: LlmUsage): void;
  /** An HTTP tool's request is about to go out. */
  onToolStarted?(call: ToolCallRequest): void;
  /** Tool transcript items in the order they happen. */
  onToolItem?(item: ToolTranscriptItem): void;
  /** An HTTP tool answered, failed or timed out. */
  onToolFinished?(run: ToolRun): void;
  /** Tools are working: a line for the caller to hear meanwhile (at most once a turn). */
  onToolWait?(line: string): void;
  /** Plays keypad tones of `digits` into the call; true once they have all played, false if they were cut. */
  pressDigits?(digits: string): Promise<boolean>;
  /**
   * Why this call cannot be transferred (a browser call has no phone line), told to the model as transfer_call's
   * result; absent when it can.
   */
  transferRefusal?: string | undefined;
  /**
   * A reply asks for tools. Resolve true once its text (maybe '') has been spoken in full,
   * false if it was interrupted: then none of its tools runs, terminal ones included.
   */
  confirmSpoken(replyText: string): Promise<boolean>;
}

export interface ReplyInput {
  llm: LlmConfig;
  /**
   * The agent's models in order (providers.ts), `llm` being the first: a request the model serving fails before its
   * first token (no connection, an error answer, no token by the deadline) is sent again to the next, which serves
   * the rest of the call.
   */
  models?: ProviderChain<LlmConfig> | undefined;
  /** The conversation so far, system prompt first, ending with the user's turn. */
  messages: readonly ChatMessage[];
  metadata: LlmRequestMetadata;
  tools: ToolExecutor;
  hooks: ReplyHooks;
  /** Aborts the whole turn: model request, tools, everything. */
  signal?: AbortSignal;
  client: Omit<LlmClientOptions, 'signal'>;
  chunking?: SpeakableOptions;
  maxRounds?: number;
  turnDeadlineMs?: number;
  toolWaitMs?: number;
}

/** The turn's working-time budget: runs while the model or tools work, paused while the reply is spoken. */
class TurnBudget {
  private readonly controller = new AbortController();
  private timer: TimerHandle | undefined = undefined;
  private startedAt = 0;
  private left: number;
  readonly signal: AbortSignal;

  constructor(
    ms: number,
    private readonly timers: ReplyTimers,
    // Monotonic and apart from the latency clock, whose readings the turn's timing marks are.
    private readonly now: () => number,
    outer: AbortSignal | undefined,
  ) {
    this.left = ms;
    this.signal = outer ? AbortSignal.any([outer, this.controller.signal]) : this.controller.signal;
  }

  get spent(): boolean {
    return this.controller.signal.aborted;
  }

  run(): void {
    if (this.timer !== undefined || this.spent) return;
    this.startedAt = this.now();
    this.timer = this.timers.setTimeout(
      () => this.controller.abort(new Error('turn deadline')),
      Math.max(0, this.left),
    );
  }

  pause(): void {
    if (this.timer === undefined) return;
    this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    this.left -= this.now() - this.startedAt;
  }
}

/** `messages`: what this turn adds to the conversation, in order. */
export type ReplyOutcome =
  | { kind: 'reply'; messages: ChatMessage[] }
  | { kind: 'end_call'; call: ToolCallRequest; messages: ChatMessage[] }
  | { kind: 'transfer_call'; call: ToolCallRequest; transferTo: string; messages: ChatMessage[] }
  /** A reply with tool calls was not fully spoken: its tools were dropped. */
  | { kind: 'interrupted'; messages: ChatMessage[] }
  /** `partialText`: what the model had said in the round that was cut off (the caller knows how much was spoken). */
  | { kind: 'aborted'; messages: ChatMessage[]; partialText: string }
  | { kind: 'flow_error'; code: FlowErrorCode; detail: string; messages: ChatMessage[] }
  | { kind: 'llm_error'; error: LlmError; messages: ChatMessage[] };

interface Reply {
  text: string;
  calls: ToolCallRequest[];
}

/** Why a failed model request moves the call to the next model; null: it does not (the turn was given up). */
function fallbackReasonOf(error: unknown): FallbackReason | null {
  if (!(error instanceof LlmError)) return 'error';
  switch (error.code) {
    case 'LLM_ABORTED':
      return null;
    case 'LLM_CONNECT_TIMEOUT':
    case 'LLM_NETWORK':
      return 'connect';
    case 'LLM_FIRST_TOKEN_TIMEOUT':
      return 'timeout';
    default:
      return 'error';
  }
}

/**
 * One model request of the turn, by the model serving. One with another after it gets no retry and a shorter
 * first-token deadline: the next model is the retry. A failure before anything came moves the call to the next model,
 * which is asked the same; a failure mid-reply moves it too, but the words already spoken stand as the reply.
 */
async function modelReply(
  input: ReplyInput,
  signal: AbortSignal,
  history: ChatMessage[],
  lastRound: boolean,
  progress: { text: string },
): Promise<Reply> {
  for (;;) {
    const models = input.models;
    const llm = models?.current ?? input.llm;
    const state = { started: false };
    try {
      return await modelReplyBy(llm, models?.hasNext ?? false, input, signal, history, lastRound, progress, state);
    } catch (error) {
      // Once the reply has started, whatever broke it is a failure mid-call.
      const reason = signal.aborted ? null : state.started ? 'error' : fallbackReasonOf(error);
      if (!models?.hasNext || reason === null || !models.fail(reason, llm)) throw error;
      if (state.started) return { text: progress.text, calls: [] };
    }
  }
}

async function modelReplyBy(
  llm: LlmConfig,
  hasNext: boolean,
  input: ReplyInput,
  signal: AbortSignal,
  history: ChatMessage[],
  lastRound: boolean,
  progress: { text: string },
  state: { started: boolean },
): Promise<Reply> {
  const hasTools = input.tools.definitions.length > 0;
  const firstTokenTimeoutMs = Math.min(
    input.client.firstTokenTimeoutMs ?? FALLBACK_DEFAULTS.llmFirstTokenMs,
    FALLBACK_DEFAULTS.llmFirstTokenMs,
  );
  const events = streamChat(
    llm,
    {
      messages: history,
      metadata: input.metadata,
      ...(hasTools ? { tools: input.tools.definitions, tool_choice: lastRound ? 'none' : 'auto' } : {}),
    },
    hasNext ? { ...input.client, signal, maxRetries: 0, firstTokenTimeoutMs } : { ...input.client, signal },
  );
  const now = input.client.now ?? Date.now;
  const chunker = new SpeakableChunker(input.chunking);
  let text = '';
  let calls: ToolCallRequest[] = [];
  let firstChunkAt: number | null = null;
  const emit = (chunk: string | null): void => {
    if (chunk === null) return;
    if (firstChunkAt === null) firstChunkAt = now();
    input.hooks.onChunk?.(chunk);
  };
  for await (const ev of events) {
    if (ev.type !== 'done') state.started = true;
    if (ev.type === 'token') {
      text += ev.text;
      progress.text = text;
      emit(chunker.push(ev.text));
    } else if (ev.type === 'tool_calls') {
      calls = ev.calls;
    } else {
      emit(chunker.flush());
      input.hooks.onLlmTiming?.({ ...ev.timing, firstChunkAt });
      if (ev.usage) input.hooks.onUsage?.(ev.usage);
    }
  }
  return { text, calls };
}

type ReplyTimers = Pick<Timers, 'setTimeout' | 'clearTimeout'>;

export async function runReply(input: ReplyInput): Promise<ReplyOutcome> {
  const timers: ReplyTimers = input.client.timers ?? realTimers;
  const budget = new TurnBudget(
    input.turnDeadlineMs ?? REPLY_DEFAULTS.turnDeadlineMs,
    timers,
    () => performance.now(),
    input.signal,
  );
  try {
    return await replyRounds(input, budget, timers);
  } finally {
    budget.pause();
  }
}

async function replyRounds(input: ReplyInput, budget: TurnBudget, timers: ReplyTimers): Promise<ReplyOutcome> {
  const maxRounds = input.maxRounds ?? REPLY_DEFAULTS.maxRounds;
  const added: ChatMessage[] = [];
  const history = [...input.messages];
  const push = (m: ChatMessage): void => {
    added.push(m);
    history.push(m);
  };
  const aborted = (): boolean => input.signal?.aborted === true;
  let emptyReplies = 0;
  let invalidRounds = 0;
  let toolsRan = false;
  let waitLineSaid = false;
  const sayWhileWorking = (line: string): void => {
    if (waitLineSaid || aborted()) return;
    waitLineSaid = true;
    input.hooks.onToolWait?.(line);
  };
  const progress = { text: '' };
  const abortedOutcome = (): ReplyOutcome => ({ kind: 'aborted', messages: added, partialText: progress.text });
  const deadlineOutcome = (): ReplyOutcome => ({
    kind: 'flow_error',
    code: 'TURN_DEADLINE',
    detail: `the model and tools worked on one turn for over ${input.turnDeadlineMs ?? REPLY_DEFAULTS.turnDeadlineMs} ms`,
    messages: added,
  });
  for (let round = 1; round <= maxRounds; round++) {
    let reply: Reply;
    progress.text = '';
    budget.run();
    try {
      reply = await modelReply(input, budget.signal, history, round === maxRounds, progress);
    } catch (err) {
      if (aborted()) return abortedOutcome();
      if (budget.spent) return deadlineOutcome();
      const e = err instanceof LlmError ? err : new LlmError('LLM_NETWORK', String(err), { cause: err });
      return { kind: 'llm_error', error: e, messages: added };
    }
    if (aborted()) return abortedOutcome();
    budget.pause();

    if (reply.calls.length === 0) {
      // Nothing to add once its tools have acted (keys pressed, a menu to listen to): the turn is done.
      if (reply.text.trim() === '' && toolsRan) return { kind: 'reply', messages: added };
      if (reply.text.trim() === '') {
        emptyReplies++;
        if (emptyReplies >= REPLY_DEFAULTS.maxEmptyReplies) {
          return {
            kind: 'flow_error',
            code: 'EMPTY_REPLY_LOOP',
            detail: `${emptyReplies} empty replies in a row`,
            messages: added,
          };
        }
        continue;
      }
      push({ role: 'assistant', content: reply.text });
      return { kind: 'reply', messages: added };
    }
    emptyReplies = 0;
    if (round === maxRounds) {
      return {
        kind: 'flow_error',
        code: 'TOOL_ROUNDS_EXCEEDED',
        detail: `still calling tools after ${maxRounds} rounds`,
        messages: added,
      };
    }

    const unknown = reply.calls.find((c) => input.tools.find(c.name) === undefined);
    if (unknown) {
      return {
        kind: 'flow_error',
        code: 'UNKNOWN_TOOL',
        detail: `the model called an unknown tool: ${unknown.name}`,
        messages: added,
      };
    }

    const spoken = await input.hooks.confirmSpoken(reply.text);
    if (aborted()) return abortedOutcome();
    if (!spoken) {
      if (reply.text !== '') push({ role: 'assistant', content: reply.text });
      return { kind: 'interrupted', messages: added };
    }

    const { acting, terminal, runs } = await runTools(input, reply.calls, budget, timers, sayWhileWorking);
    toolsRan = true;
    if (aborted()) return abortedOutcome();
    if (budget.spent) return deadlineOutcome();

    push({
      role: 'assistant',
      content: reply.text === '' ? null : reply.text,
      tool_calls: acting.map(({ call }) => ({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
      })),
    });
    for (const run of runs)
      push({ role: 'tool', tool_call_id: run.invocation.tool_call_id, content: run.modelContent });

    if (terminal?.action?.kind === 'terminal') {
      const { call } = terminal;
      // Every tool call needs its answer for the history to stay valid chat-completions input.
      push({ role: 'tool', tool_call_id: call.id, content: '{"status":"accepted"}' });
      const at = input.tools.at();
      input.hooks.onToolItem?.({
        role: 'tool_call_invocation',
        tool_call_id: call.id,
        name: call.name,
        arguments: call.arguments,
        start_at: at,
        end_at: at,
      });
      return terminal.action.outcome(added);
    }

    invalidRounds = runs.some((r) => r.failure === 'invalid_arguments') ? invalidRounds + 1 : 0;
    if (invalidRounds >= REPLY_DEFAULTS.maxInvalidArgumentRounds) {
      return {
        kind: 'flow_error',
        code: 'INVALID_ARGUMENTS',
        detail: `tool arguments failed the schema ${invalidRounds} times in a row`,
        messages: added,
      };
    }
  }
  return { kind: 'flow_error', code: 'EMPTY_REPLY_LOOP', detail: 'no reply within the round limit', messages: added };
}

/**
 * One round's tools: each call's action comes from its kind's handler (tool-handlers.ts); those that run do, together;
 * only the first terminal one counts.
 */
async function runTools(
  input: ReplyInput,
  calls: ToolCallRequest[],
  budget: TurnBudget,
  timers: ReplyTimers,
  sayWhileWorking: (line: string) => void,
) {
  let keys: Promise<unknown> = Promise.resolve();
  const toolRound: ToolRound = {
    tools: input.tools,
    hooks: input.hooks,
    signal: budget.signal,
    waitLine: REPLY_DEFAULTS.toolWaitLine,
    afterKeys(work) {
      const next = keys.then(work);
      keys = next;
      return next;
    },
  };
  const planned = calls.map((call) => ({ call, action: toolAction(call, toolRound) }));
  const terminal = planned.find((p) => p.action?.kind === 'terminal');
  const acting = planned.filter((p) => p.action?.kind === 'run' || p === terminal);
  const running = acting.flatMap((p) => (p.action?.kind === 'run' ? [p.action] : []));
  budget.run();
  // A tool that asks to be announced is, at once; otherwise tools slower than toolWaitMs get the default line.
  const announced = running.find((a) => a.announce !== undefined)?.announce;
  let waitTimer: TimerHandle | undefined;
  if (announced !== undefined) sayWhileWorking(announced);
  else if (running.some((a) => a.slow))
    waitTimer = timers.setTimeout(
      () => sayWhileWorking(REPLY_DEFAULTS.toolWaitLine),
      input.toolWaitMs ?? REPLY_DEFAULTS.toolWaitMs,
    );
  const runs = await Promise.all(
    running.map(async (action) => {
      // The invocation goes in the transcript when it starts, so what is said meanwhile follows it.
      const run = await action.run((invocation) => input.hooks.onToolItem?.(invocation));
      input.hooks.onToolItem?.(run.result);
      input.hooks.onToolFinished?.(run);
      return run;
    }),
  );
  if (waitTimer !== undefined) timers.clearTimeout(waitTimer);
  return { acting, terminal, runs };
}
