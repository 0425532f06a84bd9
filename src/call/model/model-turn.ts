// The model's turn: one reply at a time to what the caller said, spoken as it streams, with its
// tool calls; cancelled the moment the caller interrupts or adds to their turn.
import type { Logger } from 'pino';
import type { LlmError } from '../../llm/errors.ts';
import type { ChatMessage, LlmTiming, ToolCallRequest } from '../../llm/types.ts';
import type { ToolRun } from '../../tools/executor.ts';
import type { ToolTranscriptItem } from '../../tools/transcript.ts';
import type { Utterance } from '../agent/utterance.ts';
import type { CallClock } from '../call-clock.ts';
import type { ReplyHooks, ReplyOutcome } from './reply.ts';

/** Whatever answers the caller: the agent's model with its tools (runReply), or a fake in tests. */
export interface AgentBrain {
  /** One user turn: the model's reply (spoken through the hooks), tools, and how it ended. */
  respond(
    messages: readonly ChatMessage[],
    hooks: ReplyHooks,
    signal: AbortSignal,
    clock: () => number,
  ): Promise<ReplyOutcome>;
  /**
   * Text for the service's own use (a warm transfer's summary): the answer to `messages`, which end with the request,
   * written outside the conversation (nothing spoken, no tools, the model's conversation unchanged); '' when the model
   * cannot write one. Absent: respond writes it, unspoken (a chat-completions model).
   */
  writeAside?(messages: readonly ChatMessage[], signal: AbortSignal): Promise<string>;
}

/** `turn`: the user turn a reply answers, so a late report of a cancelled reply is told apart. */
export interface ModelTurnEvents {
  llmTiming(timing: LlmTiming & { firstChunkAt: number | null }, turn: number): void;
  toolStarted(call: ToolCallRequest): void;
  /** A tool's transcript item (its invocation, then its result). */
  toolItem(item: ToolTranscriptItem): void;
  toolFinished(run: ToolRun): void;
  /** Tools are working: a line to say meanwhile (not part of the model's reply). */
  toolWait(line: string): void;
  /** The reply is over; `utterances`: what it queued to be spoken, in order. */
  finished(outcome: ReplyOutcome, utterances: readonly Utterance[]): void;
}

/** What a reply needs of the agent's voice (AgentVoice): an utterance to speak its text into. */
export interface ReplyVoice {
  readonly openUtterance: Utterance | null;
  begin(): Utterance;
  say(u: Utterance, text: string): void;
  close(u: Utterance): void;
  /** Keypad tones of `keys`, played after what is queued; no words of the transcript. */
  pressKeys(keys: string): Utterance;
  /** A speech-to-speech model's audio and words into an utterance (a voice that speaks only text has none). */
  streamAudio?(u: Utterance, samples: Int16Array): void;
  streamWords?(u: Utterance, delta: string): void;
}

export interface ModelTurnOptions {
  brain: AgentBrain;
  voice: ReplyVoice;
  clock: CallClock;
  log: Logger;
  events: ModelTurnEvents;
}

interface Reply {
  controller: AbortController;
  utterances: Utterance[];
}

export class ModelTurn {
  private current: Reply | null = null;

  constructor(private readonly o: ModelTurnOptions) {}

  /** A reply is under way. */
  get running(): boolean {
    return this.current !== null;
  }

  /** Aborts with the reply under way (model request, tools, synthesis it started). */
  get signal(): AbortSignal | undefined {
    return this.current?.controller.signal;
  }

  /** Answers the conversation so far, as the reply to user turn `turn`. */
  answer(messages: readonly ChatMessage[], turn: number): void {
    void this.run(messages, turn);
  }

  /** Stops the reply under way, if any: nothing more of it is spoken, none of its tools start. */
  cancel(): void {
    this.current?.controller.abort();
    this.current = null;
  }

  private async run(messages: readonly ChatMessage[], turn: number): Promise<void> {
    const reply: Reply = { controller: new AbortController(), utterances: [] };
    this.current = reply;
    const { voice, events } = this.o;
    const { signal } = reply.controller;
    /** Tool calls whose invocation went into the record. */
    const written = new Set<string>();
    const openOf = (): Utterance => {
      let u = voice.openUtterance;
      if (!u) {
        u = voice.begin();
        reply.utterances.push(u);
      }
      return u;
    };
    const clock = this.o.clock;
    // Method shorthand, not arrows: see the note on handlers in session.ts.
    const hooks: ReplyHooks = {
      onChunk(text) {
        if (signal.aborted) return;
        let u = voice.openUtterance;
        if (!u) {
          u = voice.begin();
          reply.utterances.push(u);
        }
        voice.say(u, text);
      },
      onAudio(samples) {
        if (signal.aborted) return;
        voice.streamAudio?.(openOf(), samples);
      },
      onWords(delta) {
        if (signal.aborted) return;
        voice.streamWords?.(openOf(), delta);
      },
      closeSpeech() {
        const u = voice.openUtterance;
        if (u && reply.utterances.includes(u)) voice.close(u);
      },
      playedMs() {
        const now = clock.now();
        return reply.utterances.at(-1)?.playedMs(now) ?? 0;
      },
      onLlmTiming(timing) {
        events.llmTiming(timing, turn);
      },
      onToolStarted(call) {
        if (!signal.aborted) events.toolStarted(call);
      },
      onToolItem(item) {
        // A result follows its invocation into the record even when the turn was given up
        // meanwhile (a key pressed, then the menu talked over the agent): no call without its answer.
        if (item.role === 'tool_call_result' ? !written.has(item.tool_call_id) : signal.aborted) return;
        if (item.role === 'tool_call_invocation') written.add(item.tool_call_id);
        events.toolItem(item);
      },
      onToolFinished(run) {
        events.toolFinished(run);
      },
      onToolWait(line) {
        if (!signal.aborted) events.toolWait(line);
      },
      pressDigits(digits) {
        if (signal.aborted) return Promise.resolve(false);
        return voice.pressKeys(digits).done;
      },
      async confirmSpoken() {
        const u = voice.openUtterance;
        if (!u) return !signal.aborted;
        voice.close(u);
        return u.done;
      },
    };
    let outcome: ReplyOutcome;
    try {
      outcome = await this.o.brain.respond(messages, hooks, signal, () => this.o.clock.seconds());
    } catch (error) {
      this.o.log.error({ err: error }, 'turn failed');
      outcome = { kind: 'llm_error', error: error as LlmError, messages: [] };
    }
    if (this.current === reply) this.current = null;
    const open = voice.openUtterance;
    if (open && reply.utterances.includes(open)) voice.close(open);
    events.finished(outcome, reply.utterances);
  }
}
