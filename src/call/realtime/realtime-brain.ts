// An agent whose model is a speech-to-speech one (llm.engine "openai-realtime" or "gemini-live"): one
// socket per call, opened as the call connects, that hears every frame of the caller's and speaks its
// answers itself. The provider's protocol is behind a SpeechToSpeechSocket (llm/realtime/speech-socket.ts);
// everything here is the same for both.
// By default (llm.turn_detection "service") the call's own VAD and end-of-turn policy stay in charge: at the
// end of the caller's turn the audio buffer is committed and a response asked for (the model's turn detection
// is off). With "model", the model's own turn detection is on and the caller's audio streams to it all the
// time: the model decides when the caller has finished and starts answering by itself. Its response is held
// here (events kept) and reported to the session (ModelTurnTaking.answering), which ends the caller's turn
// at once (the recogniser still writes the caller's words, the VAD their times) and asks for the reply:
// respond() then adopts the model's response instead of asking for one. The model hearing the caller start
// (OpenAI's speech_started, Gemini's interrupted) is reported too (callerStarted): over the agent it is a
// barge-in, handled as the session's own. Gemini says so only until its turn is complete, while its audio may play
// on for seconds: speech over the agent then is judged by the interruption threshold (reportsCallerSpeech), as with
// the service's own turn detection. Its audio goes to
// the line through the agent's voice as an utterance whose words are the model's transcript, so a
// barge-in cuts the transcript at the words heard as it does for any voice, and the model is told to
// forget the rest (OpenAI: conversation.item.truncate with the audio played so far; Gemini, which has no
// truncate: a note with the words heard, in the next turn's context). Its function calls are
// the agent's tools and its MCP servers' tools (listed before the socket opens, so the session offers
// them), run by their handlers (model/tool-handlers.ts) as a chat model's are.
// Text the service needs for itself (a warm transfer's summary, writeAside) is written by the agent's first
// chat-completions model in llm.fallback, as the post-call analysis picks it (llm/chat-models.ts); without one,
// by this model out of band where its protocol allows a text-only answer (OpenAI Realtime); else by nobody.
import type { AgentConfig } from '../../agents/schema.ts';
import { chatModelsOf, firstAnswer } from '../../llm/chat-models.ts';
import { LLM_CLIENT_DEFAULTS } from '../../llm/client.ts';
import { LlmError } from '../../llm/errors.ts';
import { GEMINI_LIVE_INPUT_RATE, GEMINI_LIVE_OUTPUT_RATE, GeminiLiveSocket } from '../../llm/realtime/gemini-live.ts';
import { OpenAiRealtimeSocket, turnDetectionOf } from '../../llm/realtime/openai-realtime.ts';
import type { RealtimeEvent, SpeechFunction, SpeechToSpeechSocket } from '../../llm/realtime/speech-socket.ts';
import type { ChatMessage, LlmRequestMetadata, ToolCallRequest } from '../../llm/types.ts';
import type { OutboundHttp } from '../../net/http.ts';
import type { OpenWebSocket } from '../../net/websocket.ts';
import type { Timers } from '../../timers.ts';
import { ownTools, toolDefinitions } from '../../tools/definitions.ts';
import type { McpCallTools } from '../../tools/mcp/call-tools.ts';
import { ToolExecutor, type ToolRun } from '../../tools/executor.ts';
import { KEYPAD_TURN_PREFIX } from '../caller/keypad.ts';
import { openMcpTools, type BrainMcp, type CountedBrain, type TokenUsage } from '../model/brain.ts';
import type { AgentBrain } from '../model/model-turn.ts';
import { WEB_TRANSFER_REFUSAL } from '../model/prompts.ts';
import { REPLY_DEFAULTS, type ReplyHooks, type ReplyOutcome } from '../model/reply.ts';
import { toolAction, type ToolRound } from '../model/tool-handlers.ts';
import type { CallTransport } from '../transport.ts';
import { LineAudio } from './line-audio.ts';

const REALTIME_DEFAULTS = {
  /** Caller frames sent in one append (5 × 20 ms): fewer events, at most 80 ms more before a commit flushes them. */
  framesPerAppend: 5,
  /** The least audio worth committing: the server refuses an almost empty buffer. */
  minCommitMs: 100,
  /** Caller frames kept while the socket opens (10 s); older ones are dropped. */
  maxFramesBeforeOpen: 500,
  /**
   * With the model's own turn detection, how long a caller's turn ended by the service's fallback silence
   * (end-of-turn.ts) waits for the model's own answer before asking for one (a model slow to answer, not one that
   * never will).
   */
  modelAnswerWaitMs: 5000,
  /** Longest wait for an out-of-band text answer (writeAside), as a chat model's first token. */
  asideTimeoutMs: LLM_CLIENT_DEFAULTS.firstTokenTimeoutMs,
} as const;

interface RealtimeBrainOptions {
  agent: AgentConfig;
  /** The system prompt with the call's variables filled in: the session's instructions. */
  instructions: string;
  /** Sent with a chat-completions fallback model's requests (writeAside). */
  metadata: LlmRequestMetadata;
  openWebSocket: OpenWebSocket;
  /** The tools' HTTP requests go through it. */
  outbound: OutboundHttp;
  transportKind: CallTransport['kind'];
  /** The line's rate, which the caller's audio comes at and the model's audio goes out at. */
  lineRate: number;
  timers: Timers;
  toolFinished?: ((run: ToolRun) => void) | undefined;
  /** What the agent's MCP servers need (without it, they offer no tools). */
  mcp?: BrainMcp | undefined;
  /** A server error outside a response (a late truncate), which does not fail the turn. */
  warn?: ((event: { code: string | null }) => void) | undefined;
}

/** What the model's own turn detection tells the session (llm.turn_detection "model"). */
export interface ModelTurnTaking {
  /** The model heard the caller start speaking. */
  callerStarted(): void;
  /** The model judged the caller's turn over and started answering by itself. */
  answering(): void;
}

/** The model's own turn detection, as the session uses it. */
export interface ModelTurnSource {
  listen(listener: ModelTurnTaking): void;
  /** Whether the model would report the caller starting to speak now (ModelTurnTaking.callerStarted). */
  reportsCallerSpeech(): boolean;
}

interface RealtimeBrain extends CountedBrain {
  /** One frame of the caller's, at the line's rate. */
  hear(frame: Int16Array): void;
  /** With the model's own turn detection, hears what it decides; null with the service's. */
  readonly turnTaking: ModelTurnSource | null;
}

/** A response the model started by itself, its events kept (with when they came) until a reply adopts it. */
interface UnaskedResponse {
  startedAt: number;
  events: { event: RealtimeEvent; at: number }[];
}

/** One audio item of the model's as it streams. */
interface SpokenItem {
  id: string;
  bytes: number;
}

/** What one response produced. */
interface ResponseResult {
  calls: ToolCallRequest[];
}

export function createRealtimeBrain(o: RealtimeBrainOptions): RealtimeBrain {
  return new SpeechToSpeechBrain(o);
}

/** The provider's socket for the call, configured, and the line's audio as it takes and gives it. */
function providerOf(
  o: RealtimeBrainOptions,
  signal: AbortSignal,
): { audio: LineAudio; connect: (functions: SpeechFunction[]) => Promise<SpeechToSpeechSocket> } {
  const llm = o.agent.llm;
  if (llm.engine === 'gemini-live') {
    const audio = LineAudio.forRates(o.lineRate, GEMINI_LIVE_INPUT_RATE, GEMINI_LIVE_OUTPUT_RATE);
    return {
      audio,
      connect: (functions) =>
        GeminiLiveSocket.connect(o.openWebSocket, {
          baseUrl: llm.base_url,
          model: llm.model,
          apiKey: llm.api_key,
          instructions: o.instructions,
          voice: llm.voice,
          tools: functions,
          turns: llm.turn_detection,
          signal,
        }),
    };
  }
  const audio = LineAudio.forOpenAi(o.lineRate);
  return {
    audio,
    connect: async (functions) => {
      const socket = await OpenAiRealtimeSocket.connect(o.openWebSocket, {
        baseUrl: llm.base_url,
        model: llm.model,
        apiKey: llm.api_key,
        signal,
      });
      socket.configure({
        instructions: o.instructions,
        voice: llm.voice,
        format: audio.format,
        tools: functions.map((f) => ({ type: 'function', ...f })),
        turnDetection: turnDetectionOf(llm.turn_detection ?? 'service'),
      });
      return socket;
    },
  };
}

class SpeechToSpeechBrain implements RealtimeBrain {
  readonly brain: AgentBrain;
  private readonly audio: LineAudio;
  private readonly ready: Promise<SpeechToSpeechSocket>;
  private socket: SpeechToSpeechSocket | null = null;
  private readonly connecting = new AbortController();
  private closed = false;
  /** Caller frames waiting for the socket or for a full append. */
  private pending: Uint8Array[] = [];
  private pendingFrames = 0;
  /** Caller audio appended since the last commit (ms). */
  private uncommittedMs = 0;
  /** Conversation messages the model already knows (the instructions, its own words, what was sent). */
  private readonly known = new WeakSet<ChatMessage>();
  /** Everything the model said, to tell its words from the service's own in the history. */
  private readonly ownWords: string[] = [];
  private executor: ToolExecutor | undefined;
  private readonly mcpReady: Promise<McpCallTools | undefined>;
  private mcp: McpCallTools | undefined;
  private readonly tokens: TokenUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, turns: 0 };
  /** The model's own turn detection decides the caller's turns. */
  private readonly modelTurns: boolean;
  readonly turnTaking: ModelTurnSource | null;
  private turnListener: ModelTurnTaking | null = null;
  /** A reply waits for (or streams) a response it asked for: a response_started is its. */
  private asking = false;
  /** The model's own response, not adopted by a reply yet. */
  private unasked: UnaskedResponse | null = null;
  /** A reply waits for the model's own answer: called when it starts. */
  private waiting: (() => void) | null = null;
  /**
   * The model may still answer the caller by itself: its VAD heard speech since its last response (OpenAI's
   * speech_started); always with Gemini, whose protocol does not say.
   */
  private modelHeard: boolean;
  private readonly heardByDefault: boolean;
  /** Function calls the model withdrew (function_calls_cancelled): no output goes back for them. */
  private readonly cancelledCalls = new Set<string>();
  /** The function calls running, by call id: a withdrawn one is aborted. */
  private readonly runningCalls = new Map<string, AbortController>();

  constructor(private readonly o: RealtimeBrainOptions) {
    this.modelTurns = o.agent.llm.turn_detection === 'model';
    this.heardByDefault = o.agent.llm.engine === 'gemini-live';
    this.modelHeard = this.heardByDefault;
    this.turnTaking = this.modelTurns
      ? {
          listen: (listener) => (this.turnListener = listener),
          reportsCallerSpeech: () => this.socket?.reportsCallerSpeech?.() ?? true,
        }
      : null;
    const provider = providerOf(o, this.connecting.signal);
    this.audio = provider.audio;
    this.mcpReady = openMcpTools(o);
    this.ready = this.mcpReady.then((mcp) => {
      this.mcp = mcp;
      const functions: SpeechFunction[] = toolDefinitions([...ownTools(o.agent.tools), ...(mcp?.offered ?? [])]).map(
        (d) => ({ name: d.function.name, description: d.function.description, parameters: d.function.parameters }),
      );
      return provider.connect(functions);
    });
    this.ready = this.ready.then((socket) => {
      if (this.closed) {
        socket.close();
        throw new LlmError('LLM_ABORTED', 'the call ended before the realtime socket opened');
      }
      socket.on((event) => {
        if (event.kind === 'error') o.warn?.({ code: event.code });
        if (event.kind === 'function_calls_cancelled') this.withdraw(event.callIds);
        if (this.modelTurns) this.modelTurnEvent(event);
      });
      this.socket = socket;
      this.flush();
      return socket;
    });
    // A socket that never opens fails the first turn (respond), not the process.
    this.ready.catch(() => undefined);
    const self = this;
    this.brain = {
      respond(messages, hooks, signal, clock) {
        return self.respond(messages, hooks, signal, clock);
      },
      writeAside(messages, signal) {
        return self.writeAside(messages, signal);
      },
    };
  }

  usage(): TokenUsage | null {
    return this.tokens.turns > 0 ? { ...this.tokens } : null;
  }

  hear(frame: Int16Array): void {
    if (this.closed) return;
    this.pending.push(this.audio.toModel(frame));
    this.pendingFrames++;
    if (!this.socket) {
      if (this.pending.length > REALTIME_DEFAULTS.maxFramesBeforeOpen) {
        this.pending.shift();
        this.pendingFrames--;
      }
      return;
    }
    if (this.pendingFrames >= REALTIME_DEFAULTS.framesPerAppend) this.flush();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.connecting.abort(new LlmError('LLM_ABORTED', 'the call ended'));
    this.socket?.close();
    await (await this.mcpReady.catch(() => undefined))?.close();
  }

  /** The model's own turn taking: the caller's speech, the server's commits, responses it starts by itself. */
  private modelTurnEvent(event: RealtimeEvent): void {
    switch (event.kind) {
      case 'speech_started':
        // A response of its own not adopted yet answered words the caller is now adding to: the model drops it.
        this.unasked = null;
        this.modelHeard = true;
        this.turnListener?.callerStarted();
        return;
      case 'committed':
        this.uncommittedMs = 0;
        return;
      case 'response_started':
        if (this.asking) return;
        this.modelHeard = this.heardByDefault;
        this.unasked = { startedAt: Date.now(), events: [] };
        // A reply already waits for it (the service's fallback ended the turn first): it is that reply's.
        if (this.waiting) this.waiting();
        else this.turnListener?.answering();
        return;
      default:
        if (!this.asking) this.unasked?.events.push({ event, at: Date.now() });
    }
  }

  /** The model withdrew these calls: the running ones are aborted, none gets an output. */
  private withdraw(callIds: readonly string[]): void {
    for (const id of callIds) {
      this.cancelledCalls.add(id);
      this.runningCalls.get(id)?.abort(new LlmError('LLM_ABORTED', 'the model cancelled the function call'));
    }
  }

  /** Sends the caller audio held back, as one append. */
  private flush(): void {
    if (!this.socket || this.pending.length === 0) return;
    const bytes = Buffer.concat(this.pending);
    this.socket.append(bytes);
    this.uncommittedMs += bytes.length / this.audio.inputBytesPerMs;
    this.pending = [];
    this.pendingFrames = 0;
  }

  private tools(clock: () => number): ToolExecutor {
    this.executor ??= new ToolExecutor(this.o.agent.tools, {
      clock,
      dispatcher: this.o.outbound.dispatcher(),
      mcp: this.mcp,
    });
    return this.executor;
  }

  private async respond(
    messages: readonly ChatMessage[],
    hooks: ReplyHooks,
    signal: AbortSignal,
    clock: () => number,
  ): Promise<ReplyOutcome> {
    this.clock = clock;
    let socket: SpeechToSpeechSocket;
    try {
      socket = await this.ready;
    } catch (error) {
      return { kind: 'llm_error', error: asLlmError(error), messages: [] };
    }
    if (signal.aborted) return { kind: 'aborted', messages: [], partialText: '' };
    // The model answers the caller's turn by itself (or soon will): the reply is that response.
    if (this.modelTurns && !this.unasked && this.modelHeard && this.spokenTurnIn(messages)) {
      await this.waitForModel(signal);
      if (signal.aborted) return { kind: 'aborted', messages: [], partialText: '' };
    }
    let adopted = this.unasked;
    this.unasked = null;
    this.tell(socket, messages, adopted !== null);
    const turn = { item: null as SpokenItem | null, responding: false, text: '' };
    const onAbort = (): void => {
      if (turn.responding) socket.cancelResponse();
      const item = turn.item;
      if (!item) return;
      const itemMs = item.bytes / this.audio.outputBytesPerMs;
      const heard = Math.min(Math.floor(hooks.playedMs?.() ?? 0), Math.floor(itemMs));
      // All of it played: nothing to forget.
      if (heard < Math.floor(itemMs)) socket.truncate(item.id, heard);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (let round = 1; round <= REPLY_DEFAULTS.maxRounds; round++) {
        const result = await this.oneResponse(socket, hooks, signal, turn, adopted);
        adopted = null;
        if (signal.aborted) return { kind: 'aborted', messages: [], partialText: turn.text };
        const spoken = await hooks.confirmSpoken(turn.text);
        if (signal.aborted) return { kind: 'aborted', messages: [], partialText: turn.text };
        if (!spoken) return { kind: 'interrupted', messages: [] };
        if (result.calls.length === 0) return { kind: 'reply', messages: [] };
        const ended = await this.runTools(socket, result.calls, hooks, signal);
        if (ended) return ended;
        if (signal.aborted) return { kind: 'aborted', messages: [], partialText: turn.text };
      }
      return {
        kind: 'flow_error',
        code: 'TOOL_ROUNDS_EXCEEDED',
        detail: `still calling tools after ${REPLY_DEFAULTS.maxRounds} rounds`,
        messages: [],
      };
    } catch (error) {
      if (signal.aborted) return { kind: 'aborted', messages: [], partialText: turn.text };
      return { kind: 'llm_error', error: asLlmError(error), messages: [] };
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  private clock: () => number = () => 0;

  /**
   * Text for the service (messages end with the request): the agent's first chat-completions model that answers, or
   * this model out of band (the request as instructions after the agent's own), or ''.
   */
  private async writeAside(messages: readonly ChatMessage[], signal: AbortSignal): Promise<string> {
    const models = chatModelsOf(this.o.agent.llm);
    if (models.length > 0) {
      const client = { dispatcher: this.o.outbound.dispatcher(LLM_CLIENT_DEFAULTS.connectTimeoutMs), signal };
      const answer = await firstAnswer(
        models.map((model) => ({ ...model, stream: false })),
        { messages: [...messages], metadata: this.o.metadata },
        client,
      );
      return answer?.content ?? '';
    }
    const socket = await this.ready;
    const request = messages.at(-1)?.content;
    if (!socket.writeAside || !request || signal.aborted) return '';
    const written = socket.writeAside(`${this.o.instructions}\n\n${request}`);
    return new Promise<string>((resolve, reject) => {
      const done = (): void => {
        this.o.timers.clearTimeout(timer);
        signal.removeEventListener('abort', stop);
      };
      const stop = (): void => {
        done();
        resolve('');
      };
      const timer = this.o.timers.setTimeout(() => {
        done();
        reject(new LlmError('LLM_FIRST_TOKEN_TIMEOUT', 'the out-of-band answer did not come'));
      }, REALTIME_DEFAULTS.asideTimeoutMs);
      signal.addEventListener('abort', stop, { once: true });
      written.then(
        (text) => {
          done();
          resolve(text);
        },
        (error: unknown) => {
          done();
          reject(asLlmError(error));
        },
      );
    });
  }

  /**
   * What the model has not heard yet goes first: notes, the service's own lines (greeting, reminders), keyed digits;
   * the caller's spoken turn is its audio, committed.
   */
  private tell(socket: SpeechToSpeechSocket, messages: readonly ChatMessage[], adopting: boolean): void {
    const first = messages[0];
    if (first) this.known.add(first);
    let spokenTurn = false;
    for (const m of messages) {
      if (this.known.has(m)) continue;
      this.known.add(m);
      spokenTurn = false;
      if (m.role === 'system') socket.addText('system', m.content);
      else if (m.role === 'user') {
        if (m.content.startsWith(KEYPAD_TURN_PREFIX)) socket.addText('user', m.content);
        else spokenTurn = true;
      } else if (m.role === 'assistant' && m.content) {
        if (!this.saidByModel(m.content)) socket.addText('assistant', m.content);
        // The model's reply, cut by a barge-in: what the caller heard of it.
        else if (!this.ownWords.includes(m.content.trim())) socket.heardOnly(m.content);
      }
    }
    this.flush();
    // The model's own turn detection committed the turn it answers; one it let go by is committed here.
    if (spokenTurn && !adopting && this.uncommittedMs >= REALTIME_DEFAULTS.minCommitMs) {
      socket.commit();
      this.uncommittedMs = 0;
    }
  }

  /** The conversation ends with a caller's spoken turn the model has not been given yet. */
  private spokenTurnIn(messages: readonly ChatMessage[]): boolean {
    const last = messages.at(-1);
    return last?.role === 'user' && !this.known.has(last) && !last.content.startsWith(KEYPAD_TURN_PREFIX);
  }

  /** Until the model starts an answer of its own, the reply is aborted, or modelAnswerWaitMs passed. */
  private waitForModel(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        this.o.timers.clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.waiting = null;
        resolve();
      };
      const timer = this.o.timers.setTimeout(done, REALTIME_DEFAULTS.modelAnswerWaitMs);
      signal.addEventListener('abort', done, { once: true });
      this.waiting = done;
    });
  }

  private saidByModel(content: string): boolean {
    const words = content.trim();
    return this.ownWords.some((said) => said.startsWith(words));
  }

  /**
   * Asks for one response (or takes `adopted`, the model's own, its events so far first) and plays it as it
   * streams; resolves at response.done with its function calls.
   */
  private oneResponse(
    socket: SpeechToSpeechSocket,
    hooks: ReplyHooks,
    signal: AbortSignal,
    turn: { item: SpokenItem | null; responding: boolean; text: string },
    adopted: UnaskedResponse | null,
  ): Promise<ResponseResult> {
    return new Promise<ResponseResult>((resolve, reject) => {
      const calls: ToolCallRequest[] = [];
      let mine = adopted !== null;
      // The model's own response was asked for by its turn detection, when it started.
      const requestSentAt = adopted?.startedAt ?? Date.now();
      /** When the event being handled came (a kept one's, when it was kept). */
      let eventAt: number | null = null;
      const now = (): number => eventAt ?? Date.now();
      let firstTokenAt: number | null = null;
      let firstChunkAt: number | null = null;
      this.asking = true;
      const own = { index: this.ownWords.length };
      this.ownWords.push('');
      const finish = (): void => {
        this.asking = false;
        stop();
        stopClose();
        signal.removeEventListener('abort', onAbort);
      };
      const onAbort = (): void => {
        finish();
        resolve({ calls: [] });
      };
      const endItem = (): void => {
        const tail = this.audio.endOfItem();
        if (tail.length > 0) hooks.onAudio?.(tail);
      };
      const handle = (event: RealtimeEvent): void => {
        if (event.kind === 'response_started') {
          mine = true;
          return;
        }
        // Events of a response cancelled before this one was asked for.
        if (!mine) return;
        switch (event.kind) {
          case 'audio': {
            firstTokenAt ??= now();
            firstChunkAt ??= now();
            if (turn.item?.id !== event.itemId) {
              if (turn.item) endItem();
              turn.item = { id: event.itemId, bytes: 0 };
            }
            turn.item.bytes += event.audio.length;
            hooks.onAudio?.(this.audio.toLine(event.audio));
            return;
          }
          case 'words':
            firstTokenAt ??= now();
            turn.text += event.delta;
            this.ownWords[own.index] = turn.text.trim();
            hooks.onWords?.(event.delta);
            return;
          case 'function_call':
            firstTokenAt ??= now();
            calls.push({ id: event.callId, name: event.name, arguments: event.arguments });
            return;
          case 'error':
            // The model's own turn detection started a response as ours was asked for: this one goes on with it.
            if (this.modelTurns && event.code === 'conversation_already_has_active_response') return;
            finish();
            turn.responding = false;
            reject(new LlmError('LLM_STREAM_ERROR', `realtime error ${event.code ?? 'unknown'}`));
            return;
          case 'response_done': {
            finish();
            turn.responding = false;
            if (turn.item) endItem();
            hooks.onLlmTiming?.({ requestSentAt, firstTokenAt, endedAt: now(), attempts: 1, firstChunkAt });
            if (event.usage) {
              this.tokens.prompt_tokens += event.usage.input_tokens;
              this.tokens.completion_tokens += event.usage.output_tokens;
              this.tokens.total_tokens += event.usage.total_tokens;
              this.tokens.turns++;
              hooks.onUsage?.({
                prompt_tokens: event.usage.input_tokens,
                completion_tokens: event.usage.output_tokens,
                total_tokens: event.usage.total_tokens,
              });
            }
            if (event.status === 'failed') reject(new LlmError('LLM_STREAM_ERROR', 'the realtime response failed'));
            else resolve({ calls });
            return;
          }
          default:
        }
      };
      const stop = socket.on(handle);
      const stopClose = socket.onClose((error) => {
        finish();
        reject(error);
      });
      if (socket.failure) {
        finish();
        reject(socket.failure);
        return;
      }
      signal.addEventListener('abort', onAbort, { once: true });
      turn.responding = true;
      if (!adopted) {
        socket.createResponse();
        return;
      }
      for (const kept of adopted.events) {
        if (!turn.responding) break;
        eventAt = kept.at;
        handle(kept.event);
      }
      eventAt = null;
    });
  }

  /**
   * The response's function calls, each by its tool's handler; their outputs go back to the model. Resolves with the
   * outcome when a call ends the turn (end_call, transfer_call, an unknown tool), or null to ask for the next response.
   * Calls the model withdraws are left out, or aborted while they run, and get no output; when it withdrew them all,
   * the reply ends there (it withdraws calls only when the caller cut its turn).
   */
  private async runTools(
    socket: SpeechToSpeechSocket,
    calls: ToolCallRequest[],
    hooks: ReplyHooks,
    signal: AbortSignal,
  ): Promise<ReplyOutcome | null> {
    const tools = this.tools(this.clock);
    calls = calls.filter((c) => !this.cancelledCalls.has(c.id));
    if (calls.length === 0) return { kind: 'reply', messages: [] };
    const unknown = calls.find((c) => tools.find(c.name) === undefined);
    if (unknown)
      return {
        kind: 'flow_error',
        code: 'UNKNOWN_TOOL',
        detail: `the model called an unknown tool: ${unknown.name}`,
        messages: [],
      };
    let keys: Promise<unknown> = Promise.resolve();
    const round: ToolRound = {
      tools,
      hooks: { ...hooks, transferRefusal: this.o.transportKind === 'web' ? WEB_TRANSFER_REFUSAL : undefined },
      signal,
      waitLine: REPLY_DEFAULTS.toolWaitLine,
      afterKeys(work) {
        const next = keys.then(work);
        keys = next;
        return next;
      },
    };
    const planned = calls.map((call) => {
      const withdrawn = new AbortController();
      this.runningCalls.set(call.id, withdrawn);
      return { call, action: toolAction(call, { ...round, signal: AbortSignal.any([signal, withdrawn.signal]) }) };
    });
    const terminal = planned.find((p) => p.action?.kind === 'terminal');
    const running = planned.flatMap((p) => (p.action?.kind === 'run' ? [p.action] : []));
    const announced = running.find((a) => a.announce !== undefined)?.announce;
    let waiting = false;
    const sayWhileWorking = (line: string): void => {
      if (waiting || signal.aborted) return;
      waiting = true;
      hooks.onToolWait?.(line);
    };
    if (announced !== undefined) sayWhileWorking(announced);
    const timer = running.some((a) => a.slow)
      ? this.o.timers.setTimeout(() => sayWhileWorking(REPLY_DEFAULTS.toolWaitLine), REPLY_DEFAULTS.toolWaitMs)
      : undefined;
    const runs = await Promise.all(
      running.map(async (action) => {
        const run = await action.run((invocation) => hooks.onToolItem?.(invocation));
        hooks.onToolItem?.(run.result);
        hooks.onToolFinished?.(run);
        this.o.toolFinished?.(run);
        return run;
      }),
    );
    if (timer !== undefined) this.o.timers.clearTimeout(timer);
    for (const { call } of planned) this.runningCalls.delete(call.id);
    if (signal.aborted) return null;
    const answered = runs.filter((run) => !this.cancelledCalls.has(run.invocation.tool_call_id));
    for (const run of answered) socket.functionOutput(run.invocation.tool_call_id, run.modelContent);
    if (terminal?.action?.kind === 'terminal' && !this.cancelledCalls.has(terminal.call.id)) {
      const { call } = terminal;
      socket.functionOutput(call.id, '{"status":"accepted"}');
      const at = tools.at();
      hooks.onToolItem?.({
        role: 'tool_call_invocation',
        tool_call_id: call.id,
        name: call.name,
        arguments: call.arguments,
        start_at: at,
        end_at: at,
      });
      return terminal.action.outcome([]);
    }
    if (answered.length === 0) return { kind: 'reply', messages: [] };
    return null;
  }
}

function asLlmError(error: unknown): LlmError {
  return error instanceof LlmError ? error : new LlmError('LLM_NETWORK', String(error), { cause: error });
}
