// CallSession: the single owner of one call's state, clock, timers, transcript and
// disconnection reason. Transports, engines and the model report events to it; only it
// decides what happens next and how the call ends.
import type { Logger } from 'pino';
import type { AgentConfig } from '../agents/schema.ts';
import type { DisconnectionReason, TranscriptItem, TranscriptMessage } from '../calls/record.ts';
import type { ReplyHooks, ReplyOutcome } from './model/reply.ts';
import type { ChatMessage } from '../llm/types.ts';
import type { SttResult, SttStream, SttStreamEvents, TtsEngine, VadEvent, VadStream } from '../speech/types.ts';
import { FRAME_MS, INTERNAL_SAMPLE_RATE as INTERNAL_RATE } from '../audio/pcm.ts';
import type { CallTransport, SessionNotice } from './transport.ts';
import { Framer } from '../audio/framer.ts';
import { Resampler } from '../audio/resampler.ts';
import type { TurnLatency } from '../calls/events.ts';
import { LatencyRecorder, TurnLatencyParts, type LatencyStats } from './latency.ts';
import { OutboundPacer, type PacerWakeups } from './pacer.ts';
import type { CallRecorder } from './recorder.ts';
import type { TimerHandle, Timers } from '../timers.ts';

export const SESSION_DEFAULTS = {
  /** Audio the recogniser gets from before the speech start VAD reported (the onset). */
  prerollMs: 300,
  /** Recent inbound audio kept so a late VAD verdict can still hand the onset over. */
  historyMs: 3000,
  reminderText: 'Are you still there?',
  apologyText: "I'm sorry, something went wrong on our side. Please call again later. Goodbye.",
  flowErrorText: "I'm sorry, I can't continue this call. Goodbye.",
  /** Longest wait for last words (apology, goodbye) to play before the call ends anyway. */
  lastWordsTimeoutMs: 15_000,
  guardIntervalMs: 1000,
} as const;

/** interruption_sensitivity 0..1 → how long the caller must talk over the agent to interrupt it. */
export function interruptionThresholdMs(sensitivity: number): number {
  return Math.round(1000 - 800 * Math.min(1, Math.max(0, sensitivity)));
}

export interface AgentBrain {
  /** One user turn: the model's reply (spoken through the hooks), tools, and how it ended. */
  respond(messages: readonly ChatMessage[], hooks: ReplyHooks, signal: AbortSignal, clock: () => number): Promise<ReplyOutcome>;
}

export interface SessionEngines {
  openVad(): Promise<VadStream>;
  openStt(events: SttStreamEvents): Promise<SttStream>;
  tts: TtsEngine;
}

export interface SessionResult {
  reason: DisconnectionReason;
  message: string | null;
  startTimestamp: number;
  endTimestamp: number;
  transcript: TranscriptMessage[];
  transcriptWithToolCalls: TranscriptItem[];
  latency: Partial<Record<'e2e' | 'asr' | 'llm' | 'llm_speakable' | 'tts' | 'tool', LatencyStats>> | null;
  userTurns: number;
}

export interface SessionOptions {
  callId: string;
  agent: AgentConfig;
  /** The system prompt with dynamic variables filled in. */
  systemPrompt: string;
  transport: CallTransport;
  timers: Timers;
  /** Shared by the calls on this event loop, so the inbound path can send frames that fell due. */
  pacerWakeups?: PacerWakeups | undefined;
  engines: SessionEngines;
  brain: AgentBrain;
  recorder?: CallRecorder | undefined;
  /** Rate the recogniser is opened at; the transport's rate when absent (then it is fed as is). */
  sttSampleRate?: 8000 | 16000;
  log: Logger;
  /** Checked every second; a reason ends the call (credit balance used up, …). */
  guard?: (connectedMs: number) => DisconnectionReason | null;
  /** Each answered turn's latency parts, for observers in the process (the bench's per-turn breakdown). */
  onTurnLatency?: ((parts: TurnLatency) => void) | undefined;
  onEnd(result: SessionResult): void;
}

/** One agent message: text as it is produced, audio as it is queued, playback as confirmed. */
class Utterance {
  text = '';
  /** Each synthesized piece: its text and audio length, in order. */
  readonly pieces: { text: string; audioMs: number }[] = [];
  framesQueued = 0;
  /** Timers ms when the first frame started playing (mark echo, or the pacer's estimate). */
  startedAt: number | null = null;
  estimatedStart: number | null = null;
  endedAt: number | null = null;
  interrupted = false;
  closed = false;
  synthesis: Promise<void> = Promise.resolve();
  private settle!: (spoken: boolean) => void;
  readonly spoken: Promise<boolean>;
  /** The transcript message, once playback started. */
  message: TranscriptMessage | null = null;
  /** For words the session says itself (begin message, reminder): its entry in the model's history. */
  remembered: { role: 'assistant'; content: string } | null = null;

  constructor(readonly id: number) {
    this.spoken = new Promise((resolve) => (this.settle = resolve));
  }

  finish(spoken: boolean): void {
    this.settle(spoken);
  }

  /** The words that had played `playedMs` into the message, estimated from each piece's audio length. */
  wordsPlayed(playedMs: number): string {
    const words: string[] = [];
    let offset = 0;
    for (const piece of this.pieces) {
      const pieceWords = piece.text.split(/\s+/).filter(Boolean);
      const chars = pieceWords.reduce((n, w) => n + w.length + 1, 0) || 1;
      let at = offset;
      for (const word of pieceWords) {
        if (at >= playedMs) return words.join(' ');
        words.push(word);
        at += (piece.audioMs * (word.length + 1)) / chars;
      }
      offset += piece.audioMs;
    }
    return words.join(' ');
  }
}

type Phase = 'created' | 'live' | 'ending' | 'ended';

/**
 * The last `size` inbound frames with the audio time each ends at, copied into one preallocated
 * ring: frames held for 3 s would otherwise outlive young-generation GC by the thousand and churn
 * the old one. Frames of another length than `frameSamples` are kept by reference.
 */
class FrameHistory {
  private readonly samples: Int16Array;
  private readonly lengths: Int32Array;
  private readonly others: (Int16Array | undefined)[];
  private readonly endAts: Float64Array;
  private start = 0;
  private count = 0;

  constructor(
    private readonly size: number,
    private readonly frameSamples: number,
  ) {
    this.samples = new Int16Array(size * frameSamples);
    this.lengths = new Int32Array(size);
    this.others = new Array<Int16Array | undefined>(size);
    this.endAts = new Float64Array(size);
  }

  push(frame: Int16Array, endAt: number): void {
    const at = (this.start + this.count) % this.size;
    if (frame.length === this.frameSamples) {
      this.samples.set(frame, at * this.frameSamples);
      this.others[at] = undefined;
    } else this.others[at] = frame;
    this.lengths[at] = frame.length;
    this.endAts[at] = endAt;
    if (this.count < this.size) this.count++;
    else this.start = (this.start + 1) % this.size;
  }

  /** Hands over, oldest first, the frames that end after `from` (as new arrays), and forgets them all. */
  drain(from: number, take: (frame: Int16Array) => void): void {
    for (let i = 0; i < this.count; i++) {
      const at = (this.start + i) % this.size;
      const other = this.others[at];
      this.others[at] = undefined;
      if (this.endAts[at]! <= from) continue;
      take(other ?? this.samples.slice(at * this.frameSamples, at * this.frameSamples + this.lengths[at]!));
    }
    this.start = 0;
    this.count = 0;
  }
}

export class CallSession {
  private readonly o: SessionOptions;
  private readonly timers: Timers;
  private readonly pacer: OutboundPacer;
  private readonly latency = new LatencyRecorder();
  private phase: Phase = 'created';
  private startWall = 0;
  private vad!: VadStream;
  private stt!: SttStream;
  /** Frames waiting for the VAD, and whether the loop that feeds it is running. */
  private readonly vadQueue: Int16Array[] = [];
  private vadBusy = false;
  /** VAD and recogniser are open; audio before that is kept for the onset only. */
  private enginesReady = false;
  private inboundSamples = 0;
  /** Seconds between the call's start and the first inbound frame: VAD times are on the inbound clock. */
  private audioOffset = 0;
  /** Rate of every frame in and out: the transport's (8 kHz on a phone line). */
  private readonly rate: number;
  private readonly sttResampler: Resampler | null;
  /** Recent inbound frames with the audio time each ends at, for the recogniser's onset. */
  private readonly recent: FrameHistory;
  /** The caller's current stretch of speech, on the inbound audio clock (seconds). */
  private speech: { startAt: number; endAt: number | null; confirmed: boolean } | null = null;
  private readonly history: ChatMessage[] = [];
  private readonly transcript: TranscriptMessage[] = [];
  private readonly items: TranscriptItem[] = [];
  private lastStartAt = 0;
  private utteranceSeq = 0;
  private readonly pending: Utterance[] = [];
  private open: Utterance | null = null;
  private turn: { controller: AbortController; utterances: Utterance[] } | null = null;
  /** The caller's last turn, until the first agent audio of the answer goes out (latency.e2e). */
  private awaitingAnswer: { speechEndWall: number; turn: number } | null = null;
  /** The parts of the turn being answered, while an observer wants them. */
  private turnParts: TurnLatencyParts | null = null;
  /** The recogniser's time for the caller's last turn. */
  private lastAsrMs: number | null = null;
  private turnSeq = 0;
  private userTurns = 0;
  private reminded = false;
  private endpointTimer: TimerHandle | undefined;
  private bargeTimer: TimerHandle | undefined;
  private inactivityTimer: TimerHandle | undefined;
  private maxTimer: TimerHandle | undefined;
  private guardTimer: TimerHandle | undefined;
  private endReason: { reason: DisconnectionReason; message: string | null } | null = null;
  private finishedResolve!: () => void;
  /** Resolves once onEnd has run. */
  readonly finished: Promise<void>;

  constructor(options: SessionOptions) {
    this.o = options;
    this.timers = options.timers;
    this.finished = new Promise((resolve) => (this.finishedResolve = resolve));
    this.rate = options.transport.sampleRate ?? INTERNAL_RATE;
    this.recent = new FrameHistory(SESSION_DEFAULTS.historyMs / FRAME_MS, (this.rate * FRAME_MS) / 1000);
    const sttRate = options.sttSampleRate ?? this.rate;
    this.sttResampler = sttRate === this.rate ? null : new Resampler(this.rate, sttRate);
    this.pacer = new OutboundPacer(
      options.transport,
      options.timers,
      {
        sent: (frame, playAt) => this.onFrameSent(frame, playAt),
        drained: () => undefined,
      },
      { wakeups: options.pacerWakeups },
    );
  }

  get callId(): string {
    return this.o.callId;
  }

  get ended(): boolean {
    return this.isEnded();
  }

  private isEnded(): boolean {
    return this.phase === 'ended';
  }

  /** Seconds since the call connected, millisecond precision. */
  private seconds(wall = this.timers.now()): number {
    return Math.round(wall - this.startWall) / 1000;
  }

  /** Seconds of inbound audio, on the call's clock. */
  private audioNow(): number {
    return this.audioOffset + this.inboundSamples / this.rate;
  }

  private pushStt(frame: Int16Array): void {
    this.stt.push(this.sttResampler ? this.sttResampler.push(frame) : frame);
  }

  /** Connects the call: opens the engines, arms the timers, speaks the begin message. */
  async start(): Promise<number> {
    this.startWall = this.timers.now();
    this.o.transport.attach({
      audio: (frame) => this.onAudio(frame),
      mark: (name) => this.onMark(name),
      dtmf: (digit) => this.o.log.debug({ call_id: this.callId, digit }, 'dtmf'),
      hangup: () => this.end('user_hangup'),
    });
    this.phase = 'live';
    this.history.push({ role: 'system', content: this.o.systemPrompt });
    this.maxTimer = this.timers.setTimeout(() => this.end('max_duration_reached'), this.o.agent.max_duration_ms);
    if (this.o.guard) this.scheduleGuard();
    // The greeting starts while the recogniser loads: the caller hears the agent at once.
    const begin = this.o.agent.begin_message.trim();
    if (begin) this.sayOwnWords(begin);
    try {
      const [vad, stt] = await Promise.all([
        this.o.engines.openVad(),
        this.o.engines.openStt({
          partial: (r) => this.onPartial(r),
          // A decoder that dies mid-utterance: the caller hears an apology, the call ends.
          error: (error) => {
            this.o.log.error({ err: error, call_id: this.callId }, 'speech recogniser crashed');
            this.end('error_service', { say: SESSION_DEFAULTS.apologyText, message: 'The speech recogniser failed.' });
          },
        }),
      ]);
      this.vad = vad;
      this.stt = stt;
    } catch (error) {
      this.o.log.error({ err: error, call_id: this.callId }, 'speech engines failed to start');
      this.end('error_service', { say: SESSION_DEFAULTS.apologyText, message: 'The speech engines failed to start.' });
      return this.startWall;
    }
    if (this.phase !== 'live') {
      // Hung up while the engines opened.
      void this.stt.close().catch(() => undefined);
      this.vad.close();
      return this.startWall;
    }
    this.enginesReady = true;
    if (!begin) this.armInactivity();
    return this.startWall;
  }

  // ---- inbound audio and voice activity ----

  private onAudio(frame: Int16Array): void {
    if (this.phase !== 'live') return;
    if (this.inboundSamples === 0) this.audioOffset = (this.timers.now() - this.startWall) / 1000 - frame.length / this.rate;
    this.o.recorder?.callerAudio(frame, this.audioNow() * 1000);
    this.inboundSamples += frame.length;
    // While the caller speaks, the recogniser hears every frame; between turns only the onset is kept.
    if (this.speech) this.pushStt(frame);
    else {
      this.recent.push(frame, this.audioNow());
    }
    if (!this.enginesReady) return;
    // VAD runs in order, off the hot path; its events carry their own audio-clock time.
    this.vadQueue.push(frame);
    if (!this.vadBusy) this.feedVad();
  }

  /**
   * Hands the VAD the next queued frame, in order, one at a time. Plain callbacks, not an async
   * function: this runs for every inbound frame, and an async function's state per call was the
   * largest allocation on the service's heap.
   */
  private feedVad(): void {
    for (let frame = this.vadQueue.shift(); frame; frame = this.vadQueue.shift()) {
      if (this.phase !== 'live') continue;
      this.vadBusy = true;
      let result: Promise<VadEvent[]>;
      try {
        result = this.vad.push(frame);
      } catch (error) {
        this.vadFailed(error);
        return;
      }
      result.then(this.vadEvents, this.vadFailed);
      return;
    }
    this.vadBusy = false;
  }

  private readonly vadEvents = (events: VadEvent[]): void => {
    try {
      for (const event of events) this.onVad(event);
    } catch (error) {
      this.vadFailed(error);
      return;
    }
    this.feedVad();
  };

  private readonly vadFailed = (error: unknown): void => {
    this.vadBusy = false;
    this.vadQueue.length = 0;
    this.o.log.error({ err: error, call_id: this.callId }, 'voice activity detection failed');
    this.end('error_service', { say: SESSION_DEFAULTS.apologyText, message: 'Voice activity detection failed.' });
  };

  private onVad(event: VadEvent): void {
    if (this.phase !== 'live') return;
    const at = event.at + this.audioOffset;
    if (event.type === 'speech_start') this.onSpeechStart(at);
    else this.onSpeechEnd(at);
  }

  private agentBusy(): boolean {
    return this.pending.length > 0 || this.turn !== null;
  }

  private onSpeechStart(at: number): void {
    this.timers.clearTimeout(this.endpointTimer);
    this.endpointTimer = undefined;
    this.disarmInactivity();
    if (this.speech && this.speech.endAt !== null) {
      // The caller went on after a pause shorter than endpointing: the same turn continues.
      this.speech.endAt = null;
      return;
    }
    this.speech = { startAt: at, endAt: null, confirmed: false };
    // VAD may report the start late (it runs behind the audio): hand over from just before it.
    const from = at - SESSION_DEFAULTS.prerollMs / 1000;
    this.recent.drain(from, (frame) => this.pushStt(frame));
    if (!this.agentBusy()) {
      this.speech.confirmed = true;
      return;
    }
    // Talking over the agent: only speech longer than the threshold interrupts it.
    const heardMs = (this.audioNow() - at) * 1000;
    const wait = Math.max(0, interruptionThresholdMs(this.o.agent.interruption_sensitivity) - heardMs);
    this.bargeTimer = this.timers.setTimeout(() => {
      this.bargeTimer = undefined;
      if (!this.speech || this.phase !== 'live') return;
      this.speech.confirmed = true;
      if (this.agentBusy()) this.interrupt();
    }, wait);
  }

  private onSpeechEnd(at: number): void {
    const speech = this.speech;
    if (!speech) return;
    if (!speech.confirmed) {
      // A backchannel or a noise under the agent: not a turn, not an interruption.
      this.timers.clearTimeout(this.bargeTimer);
      this.bargeTimer = undefined;
      this.stt.cancel();
      this.speech = null;
      if (!this.agentBusy()) this.armInactivity();
      return;
    }
    speech.endAt = at;
    const silentMs = (this.audioNow() - at) * 1000;
    const wait = this.o.agent.endpointing_ms - silentMs;
    const fire = () => {
      this.endpointTimer = undefined;
      void this.endOfUserTurn();
    };
    if (wait >= 1) {
      this.endpointTimer = this.timers.setTimeout(fire, wait);
      return;
    }
    // The VAD's own silence already covered endpointing (Silero's 550 ms > the default 500): answer
    // now, not a timer tick later. A speech start in the same VAD batch still cancels it.
    const token: TimerHandle = { id: -1 };
    this.endpointTimer = token;
    queueMicrotask(() => {
      if (this.endpointTimer === token) fire();
    });
  }

  private onPartial(result: SttResult): void {
    if (this.speech?.confirmed && result.text) this.notify({ type: 'transcript', role: 'user', text: result.text, final: false, turn: this.turnSeq + 1 });
  }

  /** Barge-in: stop the model and the voice, drop queued audio, keep only what was heard. */
  private interrupt(): void {
    const now = this.timers.now();
    this.awaitingAnswer = null;
    if (this.turn) {
      this.turn.controller.abort();
      this.turn = null;
    }
    for (const u of this.pending.splice(0)) this.cutUtterance(u, now);
    this.open = null;
    this.pacer.clear();
    this.o.recorder?.agentCleared(now - this.startWall);
    this.notify({ type: 'agent_stopped' });
  }

  private cutUtterance(u: Utterance, now: number): void {
    u.interrupted = true;
    u.closed = true;
    const started = u.startedAt ?? (u.estimatedStart !== null && u.estimatedStart <= now ? u.estimatedStart : null);
    if (started !== null) {
      const spoken = u.wordsPlayed(now - started);
      if (spoken) {
        const message = u.message ?? this.addMessage('agent', spoken, this.seconds(started), this.seconds(now));
        message.content = spoken;
        message.end_at = Math.max(message.start_at, this.seconds(now));
        this.notify({ type: 'transcript', role: 'agent', text: spoken, final: true, turn: this.turnSeq });
      } else if (u.message) {
        this.dropMessage(u.message);
      }
      u.text = spoken;
    } else {
      if (u.message) this.dropMessage(u.message);
      u.text = '';
    }
    if (u.remembered) {
      u.remembered.content = u.text;
      if (!u.text) this.history.splice(this.history.indexOf(u.remembered), 1);
    }
    u.endedAt = now;
    u.finish(false);
  }

  private async endOfUserTurn(): Promise<void> {
    const speech = this.speech;
    if (!speech || speech.endAt === null || this.phase !== 'live') return;
    this.speech = null;
    const decidedAt = this.timers.now();
    const speechEndWall = this.startWall + speech.endAt * 1000;
    let result: SttResult;
    try {
      result = await this.stt.finalize();
    } catch (error) {
      this.o.log.error({ err: error, call_id: this.callId }, 'speech recognition failed');
      this.end('error_service', { say: SESSION_DEFAULTS.apologyText, message: 'The speech recogniser failed.' });
      return;
    }
    if (this.phase !== 'live') return;
    this.lastAsrMs = this.timers.now() - decidedAt;
    this.latency.add('asr', this.lastAsrMs);
    const text = result.text.trim();
    if (!text) {
      // Noise the recogniser heard no words in: no turn.
      if (!this.agentBusy() && !this.speech) this.armInactivity();
      return;
    }
    this.reminded = false;
    this.userTurns++;
    this.addMessage('user', text, speech.startAt, speech.endAt);
    this.notify({ type: 'transcript', role: 'user', text, final: true, turn: ++this.turnSeq });
    this.history.push({ role: 'user', content: text });
    if (this.turn) {
      // The caller added to a turn the model was still answering: answer everything at once.
      this.turn.controller.abort();
      this.turn = null;
    }
    void this.runReply(speechEndWall);
  }

  // ---- the model's turn ----

  private async runReply(speechEndWall: number): Promise<void> {
    const turn = { controller: new AbortController(), utterances: [] as Utterance[] };
    this.turn = turn;
    this.awaitingAnswer = { speechEndWall, turn: this.turnSeq };
    const onTurnLatency = this.o.onTurnLatency;
    const parts = onTurnLatency ? new TurnLatencyParts(this.turnSeq, this.lastAsrMs, onTurnLatency) : null;
    this.turnParts = parts;
    const hooks: ReplyHooks = {
      onChunk: (text) => {
        if (turn.controller.signal.aborted) return;
        let u = this.open;
        if (!u) {
          u = this.openUtterance();
          turn.utterances.push(u);
        }
        this.speak(u, text);
      },
      onLlmTiming: (timing) => {
        const llm = timing.firstTokenAt === null ? null : timing.firstTokenAt - timing.requestSentAt;
        const speakable = timing.firstChunkAt === null ? null : timing.firstChunkAt - timing.requestSentAt;
        if (llm !== null) this.latency.add('llm', llm);
        if (speakable !== null) this.latency.add('llm_speakable', speakable);
        parts?.model(llm, speakable);
      },
      onToolItem: (item) => {
        if (turn.controller.signal.aborted) return;
        this.addItem({ ...item, start_at: Math.max(item.start_at, this.lastStartAt), end_at: Math.max(item.end_at, item.start_at, this.lastStartAt) });
        if (item.role === 'tool_call_invocation') this.notify({ type: 'tool_call', name: item.name, arguments: item.arguments });
      },
      onToolRun: (run) => {
        if (run.latencyMs !== null) this.latency.add('tool', run.latencyMs);
        this.notify({ type: 'tool_result', name: run.invocation.name, successful: run.result.successful, content: run.result.content.slice(0, 500) });
      },
      confirmSpoken: async () => {
        const u = this.open;
        if (!u) return !turn.controller.signal.aborted;
        this.closeUtterance(u);
        return u.spoken;
      },
    };
    let outcome: ReplyOutcome;
    try {
      outcome = await this.o.brain.respond(this.history, hooks, turn.controller.signal, () => this.seconds());
    } catch (error) {
      this.o.log.error({ err: error, call_id: this.callId }, 'turn failed');
      outcome = { kind: 'llm_error', error: error as never, messages: [] };
    }
    if (this.turn === turn) this.turn = null;
    if (this.open && turn.utterances.includes(this.open)) this.closeUtterance(this.open);
    this.remember(outcome, turn.utterances);
    if (this.phase !== 'live') return;
    switch (outcome.kind) {
      case 'end_call':
        this.end('agent_hangup');
        return;
      case 'transfer_call':
        this.end('call_transfer', { message: `Transferred to ${outcome.transferTo}.` });
        return;
      case 'llm_error':
        this.o.log.error({ call_id: this.callId, code: outcome.error?.code, err: outcome.error }, 'language model failed');
        this.end('error_service', { say: SESSION_DEFAULTS.apologyText, message: `The language model failed: ${outcome.error?.message ?? 'unknown error'}` });
        return;
      case 'flow_error':
        this.end('flow_error', { say: SESSION_DEFAULTS.flowErrorText, message: `${outcome.code}: ${outcome.detail}` });
        return;
      default:
        if (!this.agentBusy() && !this.speech) this.armInactivity();
    }
  }

  /** Keeps the model's view of the conversation to what the caller actually heard. */
  private remember(outcome: ReplyOutcome, utterances: Utterance[]): void {
    const said = [...utterances];
    const messages = outcome.messages;
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i]!;
      if (m.role !== 'assistant') {
        this.history.push(m);
        continue;
      }
      const u = said.shift();
      const content = u ? u.text : (m.content ?? '');
      const answered = m.tool_calls?.filter((c) => messages.slice(i + 1).some((n) => n.role === 'tool' && n.tool_call_id === c.id));
      if (!content && !answered?.length) continue;
      this.history.push(answered?.length ? { role: 'assistant', content: content || null, tool_calls: answered } : { role: 'assistant', content });
    }
    // Spoken words of a reply the model never finished (barge-in mid-stream).
    for (const u of said) if (u.text) this.history.push({ role: 'assistant', content: u.text });
  }

  // ---- speaking ----

  /** Words the session says without the model; the model's history gets what was heard of them. */
  private sayOwnWords(text: string): void {
    const u = this.openUtterance();
    u.remembered = { role: 'assistant', content: text };
    this.history.push(u.remembered);
    this.speak(u, text);
    this.closeUtterance(u);
  }

  private openUtterance(): Utterance {
    const u = new Utterance(++this.utteranceSeq);
    this.pending.push(u);
    this.open = u;
    this.disarmInactivity();
    return u;
  }

  /** Synthesizes one piece of text after the pieces before it, straight into the pacer. */
  private speak(u: Utterance, text: string): void {
    u.text = u.text ? `${u.text} ${text}` : text;
    u.synthesis = u.synthesis.then(async () => {
      if (u.interrupted || this.isEnded()) return;
      const signal = this.turn?.controller.signal;
      const requested = this.timers.now();
      let first = true;
      let samples = 0;
      const framer = Framer.forRate(this.rate);
      const push = (frame: Int16Array) => {
        if (u.framesQueued === 0) this.pacer.enqueueMark(`u${u.id}:start`);
        u.framesQueued++;
        this.pacer.enqueue(frame);
      };
      try {
        for await (const chunk of this.o.engines.tts.synthesize(text, {
          sampleRate: this.rate,
          voiceId: this.o.agent.voice.voice_id,
          speed: this.o.agent.voice.speed,
          ...(signal ? { signal } : {}),
        })) {
          if (u.interrupted || this.isEnded()) return;
          if (first) {
            const ttsMs = this.timers.now() - requested;
            this.latency.add('tts', ttsMs);
            this.turnParts?.tts(ttsMs);
            first = false;
          }
          samples += chunk.samples.length;
          for (const frame of framer.push(chunk.samples)) push(frame);
        }
        const last = framer.flush();
        if (last && !u.interrupted) push(last);
      } catch (error) {
        if (u.interrupted || signal?.aborted || this.isEnded()) return;
        this.o.log.error({ err: error, call_id: this.callId }, 'speech synthesis failed');
        this.end('error_service', { message: 'The speech synthesizer failed.' });
        return;
      }
      u.pieces.push({ text, audioMs: (samples / this.rate) * 1000 });
    });
  }

  /** No more text for this message: mark its end once its audio is queued. */
  private closeUtterance(u: Utterance): void {
    if (u.closed) return;
    u.closed = true;
    if (this.open === u) this.open = null;
    void u.synthesis.then(() => {
      if (u.interrupted) return;
      if (u.framesQueued === 0) {
        this.finishUtterance(u, this.timers.now());
        return;
      }
      this.pacer.enqueueMark(`u${u.id}:end`);
    });
  }

  private onFrameSent(frame: Int16Array, playAt: number): void {
    this.o.recorder?.agentAudio(frame, playAt - this.startWall);
    const u = this.pending[0];
    if (u && u.estimatedStart === null) u.estimatedStart = playAt;
    if (this.awaitingAnswer) {
      const now = this.timers.now();
      const e2e = now - this.awaitingAnswer.speechEndWall;
      this.latency.add('e2e', e2e);
      this.notify({ type: 'latency', turn: this.awaitingAnswer.turn, e2e_ms: Math.round(e2e) });
      this.turnParts?.firstAudio(e2e, now);
      this.awaitingAnswer = null;
    }
  }

  private onMark(name: string): void {
    const match = /^u(\d+):(start|end)$/.exec(name);
    if (!match || this.isEnded()) return;
    const u = this.pending.find((p) => p.id === Number(match[1]));
    if (!u || u.interrupted) return;
    const now = this.timers.now();
    if (match[2] === 'start') {
      if (u.startedAt !== null) return;
      u.startedAt = now;
      u.message = this.addMessage('agent', u.text, this.seconds(now), this.seconds(now));
      this.notify({ type: 'agent_speaking' });
    } else {
      this.finishUtterance(u, now);
    }
  }

  private finishUtterance(u: Utterance, now: number): void {
    const index = this.pending.indexOf(u);
    if (index !== -1) this.pending.splice(index, 1);
    u.endedAt = now;
    if (u.text) {
      const message = u.message ?? this.addMessage('agent', u.text, this.seconds(now), this.seconds(now));
      message.content = u.text;
      message.end_at = Math.max(message.start_at, this.seconds(now));
      this.notify({ type: 'transcript', role: 'agent', text: u.text, final: true, turn: this.turnSeq });
    }
    u.finish(true);
    if (this.pending.length === 0) {
      this.notify({ type: 'agent_stopped' });
      if (this.phase === 'live' && !this.turn && !this.speech) this.armInactivity();
    }
  }

  // ---- transcript ----

  private addMessage(role: 'agent' | 'user', content: string, startAt: number, endAt: number): TranscriptMessage {
    const start = Math.max(startAt, this.lastStartAt);
    const message: TranscriptMessage = { role, content, start_at: round3(start), end_at: round3(Math.max(endAt, start)) };
    this.lastStartAt = start;
    this.transcript.push(message);
    this.items.push(message);
    return message;
  }

  private dropMessage(message: TranscriptMessage): void {
    const i = this.transcript.indexOf(message);
    if (i !== -1) this.transcript.splice(i, 1);
    const j = this.items.indexOf(message);
    if (j !== -1) this.items.splice(j, 1);
  }

  private addItem(item: TranscriptItem): void {
    this.lastStartAt = Math.max(this.lastStartAt, item.start_at);
    this.items.push(item);
  }

  private notify(notice: SessionNotice): void {
    if (this.phase !== 'ended') this.o.transport.notify(notice);
  }

  // ---- timers ----

  private armInactivity(): void {
    if (this.phase !== 'live') return;
    this.timers.clearTimeout(this.inactivityTimer);
    this.inactivityTimer = this.timers.setTimeout(() => {
      this.inactivityTimer = undefined;
      if (this.phase !== 'live' || this.agentBusy() || this.speech) return;
      if (this.reminded) {
        this.end('inactivity');
        return;
      }
      this.reminded = true;
      this.sayOwnWords(SESSION_DEFAULTS.reminderText);
    }, this.o.agent.inactivity_timeout_ms);
  }

  private disarmInactivity(): void {
    this.timers.clearTimeout(this.inactivityTimer);
    this.inactivityTimer = undefined;
  }

  private scheduleGuard(): void {
    this.guardTimer = this.timers.setTimeout(() => {
      if (this.phase !== 'live') return;
      const reason = this.o.guard?.(this.timers.now() - this.startWall);
      if (reason) this.end(reason);
      else this.scheduleGuard();
    }, SESSION_DEFAULTS.guardIntervalMs);
  }

  // ---- ending ----

  /**
   * Ends the call with `reason`, the one place a disconnection reason is decided. With `say`,
   * the caller hears those words first (an apology), as far as the line still allows.
   */
  end(reason: DisconnectionReason, options: { say?: string; message?: string } = {}): void {
    if (this.phase === 'ending' || this.isEnded()) return;
    const wasLive = this.phase === 'live';
    this.phase = 'ending';
    this.endReason = { reason, message: options.message ?? null };
    for (const t of [this.endpointTimer, this.bargeTimer, this.inactivityTimer, this.maxTimer, this.guardTimer]) this.timers.clearTimeout(t);
    if (this.turn) {
      this.turn.controller.abort();
      this.turn = null;
    }
    if (reason === 'user_hangup' || !wasLive) {
      // Nobody is listening any more: what was still to play is cut where playback stood.
      this.finalize();
      return;
    }
    if (!options.say) {
      // Last words already queued (an end_call goodbye) still play out.
      void this.afterLastWords().then(() => this.finalize());
      return;
    }
    const now = this.timers.now();
    for (const u of this.pending.splice(0)) this.cutUtterance(u, now);
    this.open = null;
    this.pacer.clear();
    const u = this.openUtterance();
    this.speak(u, options.say);
    this.closeUtterance(u);
    void this.afterLastWords().then(() => this.finalize());
  }

  private afterLastWords(): Promise<void> {
    if (this.pending.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = this.timers.setTimeout(resolve, SESSION_DEFAULTS.lastWordsTimeoutMs);
      void Promise.all(this.pending.map((u) => u.spoken)).then(() => {
        this.timers.clearTimeout(timer);
        resolve();
      });
    });
  }

  private finalize(): void {
    if (this.isEnded()) return;
    this.phase = 'ended';
    const now = this.timers.now();
    for (const u of this.pending.splice(0)) this.cutUtterance(u, now);
    this.pacer.stop();
    const reason = this.endReason ?? { reason: 'error_service' as const, message: null };
    this.o.transport.notify({ type: 'call_ended', disconnection_reason: reason.reason });
    this.o.transport.close(reason.reason);
    if (this.enginesReady) {
      void this.stt.close().catch(() => undefined);
      this.vad.close();
    }
    this.o.onEnd({
      reason: reason.reason,
      message: reason.message,
      startTimestamp: this.startWall,
      endTimestamp: now,
      transcript: this.transcript,
      transcriptWithToolCalls: this.items,
      latency: this.latency.summary(),
      userTurns: this.userTurns,
    });
    this.finishedResolve();
  }
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
