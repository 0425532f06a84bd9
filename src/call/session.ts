// CallSession: the single owner of one call — its phase, its clock, and the one place its
// disconnection reason is decided. It owns five parts and wires what each reports to the others:
//   CallerInput  what the caller is saying (audio clock, VAD, recogniser, barge-in, end of turn)
//   AgentVoice   what the agent is saying (utterances, TTS, pacing, marks, words heard)
//   ModelTurn    the model's reply with its tools, one at a time, cancelled on interruption
//   Transcript   messages and tool items as the record keeps them; ChatHistory, what the model is told
//   CallTimers   silence and reminders, the longest a call may last, the organization's guard
// plus KeypadInput, which gathers the digits the caller presses into a turn, the
// AnsweringMachineDetector of an outbound call, and CallLatency, which times each turn.
// Interruption, end of turn, tools and the ending are events the parts report; the handlers below
// say who reacts, in order.
import type { Logger } from 'pino';
import { AGENT_DEFAULTS, type AgentConfig, type VoicemailHandling } from '../agents/schema.ts';
import { FRAME_MS, INTERNAL_SAMPLE_RATE } from '../audio/pcm.ts';
import type { TurnLatency } from '../calls/events.ts';
import type { DisconnectionReason, TranscriptItem, TranscriptMessage } from '../calls/record.ts';
import { publicLlmFailure } from '../llm/errors.ts';
import { spokenTextFor } from '../speech/tts/spoken-text.ts';
import type { SttStream, SttStreamEvents, TtsEngine, VadStream } from '../speech/types.ts';
import type { TimerHandle, Timers } from '../timers.ts';
import { AgentVoice, type AgentVoiceEvents } from './agent/agent-voice.ts';
import type { PacerWakeups } from './agent/pacer.ts';
import type { Utterance } from './agent/utterance.ts';
import { CallClock } from './call-clock.ts';
import { CallTimers, type CallTimerEvents } from './call-timers.ts';
import { AnsweringMachineDetector, type MachineDetectorEvents, type MachineEvidence } from './caller/answering-machine.ts';
import { DEFAULT_BACKCHANNELS, isBackchannel } from './caller/backchannel.ts';
import { CallerInput, interruptionThresholdMs, type CallerEvents, type CallerTurn } from './caller/caller-input.ts';
import { SemanticEndOfTurn, SilenceEndOfTurn, type EndOfTurnPolicy } from './caller/end-of-turn.ts';
import { KEYPAD_TURN_PREFIX, KeypadInput, type KeypadEntry, type KeypadEvents } from './caller/keypad.ts';
import { CallLatency, type LatencyStats } from './latency.ts';
import { CallListeners, type CallListener } from './listeners.ts';
import { ChatHistory } from './model/history.ts';
import { ModelTurn, type AgentBrain, type ModelTurnEvents } from './model/model-turn.ts';
import type { ReplyOutcome } from './model/reply.ts';
import type { CallRecorder } from './recorder.ts';
import { Transcript } from './transcript.ts';
import { WARM_TRANSFER_DEFAULTS, WarmTransfer, type WarmTransferCarrier } from './warm-transfer.ts';
import type { CallTransport, SessionNotice, TransportHandlers } from './transport.ts';

/** The agent's end-of-turn rule: its `endpointing` setting, else the default mode. */
export function endOfTurnPolicy(agent: Pick<AgentConfig, 'endpointing' | 'endpointing_ms'>): EndOfTurnPolicy {
  const e = agent.endpointing ?? { mode: AGENT_DEFAULTS.endpointingMode, min_ms: AGENT_DEFAULTS.endpointingMinMs, max_ms: AGENT_DEFAULTS.endpointingMaxMs };
  if (e.mode === 'silence') return new SilenceEndOfTurn(agent.endpointing_ms);
  return new SemanticEndOfTurn({ minMs: e.min_ms, maxMs: e.max_ms, unsureMs: Math.max(e.min_ms, Math.min(agent.endpointing_ms, e.max_ms)) });
}

const EVIDENCE_WORDS: Record<MachineEvidence, string> = { beep: 'beep', words: 'greeting words', long_greeting: 'long greeting', carrier: "carrier's detection" };

/** How the model is asked for a warm transfer's summary (the demo model knows it). */
export const TRANSFER_SUMMARY_NOTE = 'You are handing this call over to a colleague who just answered.';

/** How the model is told a transfer did not go through (the demo model knows it). */
export const TRANSFER_FAILED_NOTE = 'The transfer did not go through';

/** How the model is told, for a reminder, that the caller has gone quiet (the demo model knows it). */
export const REMINDER_NOTE_PREFIX = 'The caller has said nothing for';

export const SESSION_DEFAULTS = {
  reminderText: 'Are you still there?',
  /** Said when the recogniser failed while the caller spoke: the turn is lost, the call is not. */
  unheardText: "Sorry, I didn't catch that. Could you say it again?",
  apologyText: "I'm sorry, something went wrong on our side. Please call again later. Goodbye.",
  flowErrorText: "I'm sorry, I can't continue this call. Goodbye.",
  /** Longest wait for last words (apology, goodbye) to play before the call ends anyway. */
  lastWordsTimeoutMs: 15_000,
  /** A machine's greeting is over once it has been quiet this long (no beep came). */
  greetingEndMs: 1_500,
  /** Longest wait, once a machine was found, for its beep or the end of its greeting. */
  beepWaitMs: 10_000,
  /** Longest wait for the caller to come back on a new stream after a transfer failed. */
  transferReturnMs: 15_000,
} as const;

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
  /** Where the caller was transferred, and when the destination answered (wall ms). */
  transfer: { destination: string; at: number } | null;
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
  guard?: (connectedMs: number) => Promise<DisconnectionReason | null>;
  /** The transcript so far, each time a message or tool item settles (the record keeps it at once). */
  onTranscript?: ((messages: readonly TranscriptMessage[], items: readonly TranscriptItem[]) => void) | undefined;
  /**
   * Starts a cold transfer of the caller to `to` on the carrier (the line is given up); throws when
   * it cannot. Absent: the call cannot transfer, and transfer_call only ends it.
   */
  transfer?: ((to: string) => Promise<void>) | undefined;
  /** What the carrier does for a warm transfer; absent: a warm transfer_call is done cold. */
  warmTransfer?: WarmTransferCarrier | undefined;
  /** An outbound call that looks for an answering machine, and what to do on one. */
  voicemail?: VoicemailHandling | null | undefined;
  /** Each answered turn's latency parts, for observers in the process (the bench's per-turn breakdown). */
  onTurnLatency?: ((parts: TurnLatency) => void) | undefined;
  onEnd(result: SessionResult): void;
}

type Phase = 'created' | 'live' | 'ending' | 'ended';

export class CallSession {
  private readonly clock: CallClock;
  private readonly caller: CallerInput;
  /** null when the agent turned keypad input off. */
  private readonly keypad: KeypadInput | null;
  /** null unless this outbound call looks for an answering machine. */
  private readonly machine: AnsweringMachineDetector | null;
  /** A machine answered: the message waits for its beep or the end of its greeting. */
  private voicemailWait: { evidence: MachineEvidence; message: string; timer: TimerHandle | undefined; deadline: TimerHandle } | null = null;
  private readonly voice: AgentVoice;
  private readonly model: ModelTurn;
  private readonly transcript: Transcript;
  private readonly history: ChatHistory;
  private readonly timers: CallTimers;
  private readonly latency: CallLatency;
  /** Made for the first listener through the API: a call nobody listens to carries none of it. */
  private listeners: CallListeners | undefined;
  private phase: Phase = 'created';
  private userTurns = 0;
  /** The reply under way is a reminder the model is writing. */
  private modelReminder = false;
  /** A cold transfer under way: the caller is being dialled through to `to`; `failed` once the carrier said it did not connect. */
  private transferring: { to: string; failed: string | null; returnTimer: TimerHandle | undefined } | null = null;
  private transferred: { destination: string; at: number } | null = null;
  /** A warm transfer's second leg being called, told and bridged. */
  private warm: WarmTransfer | null = null;
  /** Words of the agent's the caller's last interruption cut off, until its words show whether it meant it. */
  private cutShort = '';
  private endReason: { reason: DisconnectionReason; message: string | null } | null = null;
  private finishedResolve!: () => void;
  /** Resolves once onEnd has run. */
  readonly finished: Promise<void>;

  constructor(private readonly o: SessionOptions) {
    this.finished = new Promise((resolve) => (this.finishedResolve = resolve));
    // Every frame in and out is at the transport's rate (8 kHz on a phone line).
    const rate = o.transport.sampleRate ?? INTERNAL_SAMPLE_RATE;
    this.clock = new CallClock(o.timers);
    this.latency = new CallLatency(() => o.timers.now(), o.onTurnLatency);
    this.history = new ChatHistory(o.systemPrompt);
    this.transcript = new Transcript(o.onTranscript && ((t) => o.onTranscript?.(t.messages, t.items)));
    const session = this;
    this.caller = new CallerInput({
      rate,
      sttRate: o.sttSampleRate ?? rate,
      clock: this.clock,
      timers: o.timers,
      engines: o.engines,
      endOfTurn: endOfTurnPolicy(o.agent),
      interruptionThresholdMs: interruptionThresholdMs(o.agent.interruption_sensitivity),
      agentBusy() {
        return session.voice.busy || session.model.running;
      },
      recording: o.recorder,
      noiseSuppression: o.agent.noise_suppression,
      events: CallSession.callerReactions(this),
      log: o.log,
    });
    const dtmf = o.agent.dtmf;
    this.keypad =
      dtmf?.enabled === false
        ? null
        : new KeypadInput(
            { terminator: dtmf ? dtmf.terminator : AGENT_DEFAULTS.dtmfTerminator, maxDigits: dtmf?.max_digits ?? null, timeoutMs: dtmf?.timeout_ms ?? AGENT_DEFAULTS.dtmfTimeoutMs },
            o.timers,
            CallSession.keypadReactions(this),
          );
    this.machine = o.voicemail ? new AnsweringMachineDetector(rate, o.voicemail.detectTimeoutMs, CallSession.machineReactions(this)) : null;
    this.voice = new AgentVoice({
      transport: o.transport,
      rate,
      tts: o.engines.tts,
      voiceId: o.agent.voice.voice_id,
      speed: o.agent.voice.speed,
      spoken: spokenTextFor(o.agent.voice),
      timers: o.timers,
      clock: this.clock,
      pacerWakeups: o.pacerWakeups,
      replySignal() {
        return session.model.signal;
      },
      recording: o.recorder,
      events: CallSession.voiceReactions(this),
    });
    this.model = new ModelTurn({ brain: o.brain, voice: this.voice, clock: this.clock, log: o.log, events: CallSession.modelReactions(this) });
    this.timers = new CallTimers({
      timers: o.timers,
      clock: this.clock,
      inactivityTimeoutMs: o.agent.inactivity_timeout_ms,
      reminderTriggerMs: o.agent.reminder_trigger_ms,
      reminderMaxCount: o.agent.reminder_max_count,
      maxDurationMs: o.agent.max_duration_ms,
      guard: o.guard,
      events: CallSession.timerReactions(this),
    });
  }

  get callId(): string {
    return this.o.callId;
  }

  get ended(): boolean {
    return this.phase === 'ended';
  }

  /** Connects the call: arms the timers, speaks the begin message, opens the engines. */
  async start(): Promise<number> {
    const startWall = this.clock.connect();
    this.o.transport.attach(CallSession.lineReactions(this));
    this.phase = 'live';
    this.timers.start();
    // The greeting starts while the recogniser loads: the caller hears the agent at once.
    const begin = this.o.agent.begin_message.trim();
    if (begin) this.say(begin);
    try {
      await this.caller.open();
    } catch (error) {
      this.o.log.error({ err: error }, 'speech engines failed to start');
      this.end('error_service', { say: SESSION_DEFAULTS.apologyText, message: 'The speech engines failed to start.' });
      return startWall;
    }
    if (this.phase === 'live' && !begin) this.timers.armInactivity();
    return startWall;
  }

  /**
   * Ends the call with `reason`, the one place a disconnection reason is decided. With `say`,
   * the caller hears those words first (an apology), as far as the line still allows.
   */
  end(reason: DisconnectionReason, options: { say?: string; message?: string; now?: boolean } = {}): void {
    if (this.phase === 'ending' || this.phase === 'ended') return;
    const wasLive = this.phase === 'live';
    this.phase = 'ending';
    this.endReason = { reason, message: options.message ?? null };
    this.caller.stop();
    this.keypad?.stop();
    this.machine?.stop();
    if (this.voicemailWait) {
      this.o.timers.clearTimeout(this.voicemailWait.timer);
      this.o.timers.clearTimeout(this.voicemailWait.deadline);
    }
    this.timers.stop();
    this.model.cancel();
    if (this.transferring) this.o.timers.clearTimeout(this.transferring.returnTimer);
    this.warm?.stop();
    if (reason === 'user_hangup' || !wasLive || options.now) {
      // Nobody is listening any more (or must not be served any more): what was still to play is cut where playback stood.
      this.finalize();
      return;
    }
    if (options.say) {
      this.voice.interrupt();
      this.voice.sayAll(options.say);
    }
    // Last words (an apology, an end_call goodbye) play out first.
    void this.voice.finished(SESSION_DEFAULTS.lastWordsTimeoutMs).then(() => this.finalize());
  }

  /**
   * A line given through the API: spoken after what is being said, or with `interrupt` at once,
   * cutting the agent and any reply under way. It is an agent message of the transcript.
   */
  speak(text: string, interrupt: boolean): void {
    if (this.phase !== 'live') return;
    if (interrupt) this.interrupt();
    this.say(text);
  }

  /** Someone listening through the API: the call's events and mixed audio until it ends. */
  listen(listener: CallListener): () => void {
    if (this.phase === 'ended') {
      listener.ended();
      return () => undefined;
    }
    this.listeners ??= new CallListeners(this.o.transport.sampleRate ?? INTERNAL_SAMPLE_RATE);
    return this.listeners.add(listener);
  }

  /** The transfer's destination answered: the caller is theirs now, and this call is over. */
  transferAnswered(): void {
    const transfer = this.transferring;
    if (!transfer || this.phase !== 'live') return;
    this.transferred = { destination: transfer.to, at: this.o.timers.now() };
    this.end('call_transfer', { message: `Transferred to ${transfer.to}.` });
  }

  /** The transfer did not connect (`why`: busy, no answer, failed): the caller comes back on a new stream. False when no transfer was under way. */
  transferFailed(why: string): boolean {
    const transfer = this.transferring;
    if (!transfer || transfer.failed !== null || this.phase !== 'live') return false;
    transfer.failed = why;
    // The carrier sends the caller back at once; one who never arrives has hung up.
    transfer.returnTimer = this.o.timers.setTimeout(() => this.end('user_hangup', { message: `The transfer to ${transfer.to} failed (${why}) and the caller did not come back.` }), SESSION_DEFAULTS.transferReturnMs);
    return true;
  }

  /** The caller is back on a new stream after a failed transfer (the line already carries it): the model is told, and answers. */
  resumeAfterTransfer(): void {
    const transfer = this.transferring;
    if (!transfer || this.phase !== 'live') return;
    this.o.timers.clearTimeout(transfer.returnTimer);
    this.transferring = null;
    this.caller.catchUp();
    this.history.note(`${TRANSFER_FAILED_NOTE} to ${transfer.to}: ${transfer.failed ?? 'it could not be started'}. The caller is back on the line with you; tell them and offer to help another way.`);
    this.model.answer(this.history.messages, this.userTurns);
  }

  /** A warm transfer's second leg answered: `line` is its stream. False when no warm transfer is waiting for one. */
  consultAnswered(line: CallTransport): boolean {
    if (!this.warm || this.phase !== 'live') return false;
    void this.warm.answered(line);
    return true;
  }

  /** A warm transfer's second leg did not connect (`why`). */
  consultFailed(why: string): void {
    this.warm?.fail(why);
  }

  /** The carrier says the call is over (the caller hung up while being transferred). */
  carrierEnded(): void {
    // The carrier ends the caller's leg as it bridges a warm transfer: that is the transfer, not a hang-up.
    if (this.warm?.bridging) return;
    if (this.transferring && this.phase === 'live') this.end('user_hangup', { message: `The caller hung up while being transferred to ${this.transferring.to}.` });
  }

  /** The carrier's own answering-machine detection found a machine (Twilio AMD). */
  carrierFoundMachine(): void {
    if (this.phase !== 'live') return;
    if (this.machine) this.machine.carrier('machine', this.clock.sinceStart());
    else this.onMachine('carrier');
  }

  /** A note given through the API: the model sees it from its next turn. */
  addContext(content: string): void {
    if (this.phase === 'live') this.history.note(content);
  }

  // ---- what the line and the parts report, and who reacts ----
  // Handlers are method shorthand, never arrows in object literals: tsx names such an arrow at run
  // time (esbuild's keepNames), which gives every call ~0.3 KiB more heap per handler.

  /** The line: caller audio, playback marks, keypad digits, hang-up. */
  private static lineReactions(s: CallSession): TransportHandlers {
    return {
      audio(frame) {
        s.caller.audio(frame);
        if (s.machine?.listening) s.machine.audio(frame, s.clock.sinceStart() - FRAME_MS);
        if (s.listeners?.active) s.listeners.caller(frame);
      },
      mark(name) {
        s.voice.mark(name);
      },
      dtmf(digit) {
        if (s.keypad && s.phase === 'live') s.keypad.press(digit);
        else s.o.log.debug({ digit }, 'keypad digit ignored');
      },
      hangup() {
        s.end('user_hangup');
      },
    };
  }

  /** The caller side: speech, interruption, the end of a turn, a failure to hear. */
  private static callerReactions(s: CallSession): CallerEvents {
    return {
      speechStarted(at) {
        s.timers.disarmInactivity();
        s.machine?.speechStarted(at * 1000);
        if (s.voicemailWait) s.o.timers.clearTimeout(s.voicemailWait.timer);
      },
      speechEnded(at) {
        s.machine?.speechEnded(at * 1000);
        if (s.voicemailWait) s.awaitGreetingEnd();
      },
      interruption() {
        if (s.voicemailWait) return;
        // Until the caller's words are known, what was cut may yet be resumed.
        s.cutShort = s.interrupt()
          .map((u) => u.unsaid)
          .filter(Boolean)
          .join(' ');
      },
      partial(text) {
        s.machine?.words(text, s.clock.sinceStart());
        s.notify({ type: 'transcript', role: 'user', text, final: false, turn: s.userTurns + 1 });
      },
      recognised(ms) {
        s.latency.recognised(ms);
      },
      userTurn(turn) {
        s.onUserTurn(turn);
      },
      noTurn() {
        // The sound that stopped the agent held no words (a cough, a door): it goes on where it stopped.
        if (s.resumeCutShort()) return;
        s.armInactivityIfQuiet();
      },
      unheard() {
        if (s.phase !== 'live' || s.voicemailWait) return;
        s.say(SESSION_DEFAULTS.unheardText);
      },
      failed(message) {
        s.end('error_service', { say: SESSION_DEFAULTS.apologyText, message });
      },
    };
  }

  /** The keypad: a key pressed over the agent stops it as speech does; an entry is the caller's turn. */
  private static keypadReactions(s: CallSession): KeypadEvents {
    return {
      began() {
        s.timers.disarmInactivity();
        if (!s.voicemailWait && (s.voice.busy || s.model.running)) {
          s.cutShort = '';
          s.interrupt();
        }
      },
      entered(entry) {
        if (s.phase === 'live') s.onKeypadTurn(entry);
      },
    };
  }

  private onKeypadTurn(entry: KeypadEntry): void {
    const turn = { text: entry.digits, startAt: this.clock.seconds(entry.firstAt), endAt: this.clock.seconds(entry.lastAt), speechEndWall: entry.lastAt };
    this.onUserTurn(turn, true);
  }

  /** Barge-in: stop the model and the voice, drop queued audio, keep only what was heard. */
  private interrupt(): Utterance[] {
    this.latency.answerAbandoned();
    this.model.cancel();
    const cut = this.voice.interrupt();
    this.notify({ type: 'agent_stopped' });
    return cut;
  }

  /** Says what a false interruption cut off, if anything; false when there is nothing to resume. */
  private resumeCutShort(): boolean {
    const rest = this.cutShort;
    this.cutShort = '';
    if (!rest || this.phase !== 'live') return false;
    this.say(rest);
    return true;
  }

  /**
   * End of the caller's turn: it goes into the transcript and the history, and the model answers.
   * `keypad`: the turn was keyed; the model is told so, and the transcript marks it.
   */
  private onUserTurn(turn: CallerTurn, keypad = false): void {
    this.timers.callerSpoke();
    this.modelReminder = false;
    this.userTurns++;
    this.transcript.addUser(turn.text, turn.startAt, turn.endAt, keypad);
    this.notify({ type: 'transcript', role: 'user', text: turn.text, final: true, turn: this.userTurns });
    if (!keypad) this.machine?.words(turn.text, this.clock.sinceStart());
    // A machine's greeting is kept, never answered; nor is a caller being transferred.
    if (this.voicemailWait || this.transferring || this.phase !== 'live') return;
    this.history.user(keypad ? KEYPAD_TURN_PREFIX + turn.text : turn.text);
    // Only an acknowledgement stopped the agent: it finishes what it was saying instead of answering it.
    if (!keypad && this.cutShort && isBackchannel(turn.text, this.o.agent.backchannel_words ?? DEFAULT_BACKCHANNELS)) {
      this.resumeCutShort();
      return;
    }
    this.cutShort = '';
    // The caller added to a turn the model was still answering: answer everything at once.
    this.model.cancel();
    this.latency.answering(this.userTurns, turn.speechEndWall);
    this.model.answer(this.history.messages, this.userTurns);
  }

  /** Who answered: a person talks on as before; a machine gets the voicemail once its beep has gone. */
  private static machineReactions(s: CallSession): MachineDetectorEvents {
    return {
      decided(answerer) {
        s.o.log.info({ answered_by: answerer.by, evidence: answerer.by === 'machine' ? answerer.evidence : undefined, at_ms: Math.round(answerer.atMs) }, 'answering machine detection');
        if (answerer.by === 'machine' && s.phase === 'live') s.onMachine(answerer.evidence);
      },
      beep() {
        if (s.voicemailWait) s.leaveVoicemail();
      },
    };
  }

  /** A machine answered: hang up, or stop talking and wait for the beep to leave the message. */
  private onMachine(evidence: MachineEvidence): void {
    const message = this.o.voicemail?.message;
    if (!message) {
      this.end('voicemail_reached', { message: `An answering machine answered (found by its ${EVIDENCE_WORDS[evidence]}); no message was left.` });
      return;
    }
    this.cutShort = '';
    this.interrupt();
    const deadline = this.o.timers.setTimeout(() => this.leaveVoicemail(), SESSION_DEFAULTS.beepWaitMs);
    this.voicemailWait = { evidence, message, timer: undefined, deadline };
    // Found by its beep: the greeting is over. Otherwise a beep, or the greeting's end, starts the message.
    if (evidence === 'beep') this.leaveVoicemail();
    else if (!this.caller.speaking) this.awaitGreetingEnd();
  }

  private awaitGreetingEnd(): void {
    const wait = this.voicemailWait;
    if (!wait) return;
    this.o.timers.clearTimeout(wait.timer);
    wait.timer = this.o.timers.setTimeout(() => this.leaveVoicemail(), SESSION_DEFAULTS.greetingEndMs);
  }

  private leaveVoicemail(): void {
    const wait = this.voicemailWait;
    if (!wait || this.phase !== 'live') return;
    this.end('voicemail_reached', {
      say: wait.message,
      message: `An answering machine answered (found by its ${EVIDENCE_WORDS[wait.evidence]}); the voicemail message was left.`,
    });
  }

  /** The agent's voice: playback started and ended, audio out, synthesis failed. */
  private static voiceReactions(s: CallSession): AgentVoiceEvents {
    return {
      queued() {
        s.timers.disarmInactivity();
      },
      started(u, at) {
        s.transcript.agentStarted(u.id, u.text, s.clock.seconds(at));
        s.notify({ type: 'agent_speaking' });
      },
      ended(u, from, at) {
        s.onUtteranceEnded(u, from, at);
      },
      drained() {
        s.notify({ type: 'agent_stopped' });
        if (s.phase === 'live') s.armInactivityIfQuiet();
      },
      frameSent(frame) {
        if (s.listeners?.active) s.listeners.agent(frame);
        const answered = s.latency.audioOut();
        if (answered) s.notify({ type: 'latency', turn: answered.turn, e2e_ms: Math.round(answered.e2e) });
      },
      firstAudio(ms) {
        s.latency.tts(ms);
      },
      failed(error) {
        s.o.log.error({ err: error }, 'speech synthesis failed');
        s.end('error_service', { message: 'The speech synthesizer failed.' });
      },
    };
  }

  /** An utterance was heard in full or cut: the transcript and the history keep the words heard. */
  private onUtteranceEnded(u: Utterance, from: number, at: number): void {
    if (this.transcript.agentEnded(u.id, u.text, this.clock.seconds(from), this.clock.seconds(at))) {
      this.notify({ type: 'transcript', role: 'agent', text: u.text, final: true, turn: this.userTurns });
    }
    if (u.interrupted) this.history.interrupted(u);
  }

  /** The model's turn: its timing, its tools, and how the reply ended. */
  private static modelReactions(s: CallSession): ModelTurnEvents {
    return {
      llmTiming(timing, turn) {
        s.latency.model(timing, turn);
      },
      toolStarted(call) {
        s.o.log.debug({ tool: call.name }, 'tool started');
      },
      toolItem(item) {
        s.transcript.addToolItem(item);
        if (item.role === 'tool_call_invocation') s.notify({ type: 'tool_call', name: item.name, arguments: item.arguments });
      },
      toolWait(line) {
        // Heard by the caller and kept in the transcript; the model's history has its reply only.
        s.voice.sayAll(line);
      },
      toolFinished(run) {
        if (run.latencyMs !== null) s.latency.tool(run.latencyMs);
        s.notify({ type: 'tool_result', name: run.invocation.name, successful: run.result.successful, content: run.result.content.slice(0, 500) });
      },
      finished(outcome, utterances) {
        s.history.replied(outcome, utterances);
        const reminder = s.modelReminder;
        s.modelReminder = false;
        // A reminder the model could not write is said as written: a silent caller is no reason to fail the call.
        if (reminder && (outcome.kind === 'llm_error' || outcome.kind === 'flow_error')) {
          s.o.log.warn({ kind: outcome.kind }, 'the model could not write a reminder; saying the fixed one');
          if (s.phase === 'live') s.say(s.o.agent.reminder_message ?? SESSION_DEFAULTS.reminderText);
          return;
        }
        if (s.phase === 'live') s.actOn(outcome);
      },
    };
  }

  /** How a reply ended decides whether the call goes on. */
  private actOn(outcome: ReplyOutcome): void {
    switch (outcome.kind) {
      case 'end_call':
        this.end('agent_hangup');
        return;
      case 'transfer_call': {
        const tool = this.o.agent.tools.find((t) => t.name === outcome.call.name);
        const settings = tool?.type === 'transfer_call' ? tool : undefined;
        if (settings?.mode === 'warm' && this.o.warmTransfer) void this.startWarmTransfer(outcome.transferTo, this.o.warmTransfer, settings.transfer_message);
        else if (this.o.transfer) void this.startTransfer(outcome.transferTo, this.o.transfer, settings?.transfer_message);
        else this.end('call_transfer', { message: `Transferred to ${outcome.transferTo}.` });
        return;
      }
      case 'llm_error':
        this.o.log.error({ code: outcome.error?.code, err: outcome.error }, 'language model failed');
        this.end('error_service', { say: SESSION_DEFAULTS.apologyText, message: `The language model failed: ${outcome.error ? publicLlmFailure(outcome.error) : 'unknown error'}.` });
        return;
      case 'flow_error':
        this.end('flow_error', { say: SESSION_DEFAULTS.flowErrorText, message: `${outcome.code}: ${outcome.detail}` });
        return;
      default:
        this.armInactivityIfQuiet();
    }
  }

  /** The line before the transfer plays out; then the caller holds while the destination is called, told, and bridged in. */
  private async startWarmTransfer(to: string, carrier: WarmTransferCarrier, message: string | undefined): Promise<void> {
    if (!(await this.transferLinePlayed(to, message))) return;
    const session = this;
    const log = this.o.log.child({ transfer_to: to });
    this.warm = new WarmTransfer({
      to,
      carrier,
      voice: this.voice,
      consultVoice: (line) => this.consultVoice(line),
      summary: () => this.transferSummary(),
      log,
      connected(summary) {
        session.warm = null;
        session.transferred = { destination: to, at: session.o.timers.now() };
        // The hold music was the last thing on the caller's line, which is the destination's now.
        session.voice.interrupt();
        session.end('call_transfer', { message: `Transferred to ${to} after telling them: ${summary}` });
      },
      failed(why) {
        session.warm = null;
        // The hold music stops; the caller is the agent's again.
        session.voice.interrupt();
        if (session.transferring) session.transferring.failed = why;
        session.resumeAfterTransfer();
      },
    });
    log.info('warm transfer started: the caller is on hold');
    await this.warm.start();
  }

  /** The agent's voice on a warm transfer's second leg: the same voice as the caller hears, nothing of it in the transcript. */
  private consultVoice(line: CallTransport): AgentVoice {
    const noop = (): void => undefined;
    return new AgentVoice({
      transport: line,
      rate: line.sampleRate ?? INTERNAL_SAMPLE_RATE,
      tts: this.o.engines.tts,
      voiceId: this.o.agent.voice.voice_id,
      speed: this.o.agent.voice.speed,
      spoken: spokenTextFor(this.o.agent.voice),
      timers: this.o.timers,
      clock: this.clock,
      pacerWakeups: this.o.pacerWakeups,
      replySignal: () => undefined,
      events: { queued: noop, started: noop, ended: noop, drained: noop, frameSent: noop, firstAudio: noop, failed: (error) => this.o.log.warn({ err: error }, 'the transfer summary could not be spoken') },
    });
  }

  /** The model's summary of the call so far, for the person taking it over. */
  private async transferSummary(): Promise<string> {
    const parts: string[] = [];
    // Given up with the call: a caller who hangs up on hold needs no summary.
    const controller = new AbortController();
    void this.finished.then(() => controller.abort());
    const messages = [...this.history.messages, { role: 'system' as const, content: `${TRANSFER_SUMMARY_NOTE} Speak to them in two short sentences: who is calling and what they need. Do not call tools.` }];
    await this.o.brain.respond(
      messages,
      {
        onChunk(text) {
          parts.push(text);
        },
        async confirmSpoken() {
          return false;
        },
      },
      controller.signal,
      () => this.clock.seconds(),
    );
    return parts.join(' ').trim() || WARM_TRANSFER_DEFAULTS.fallbackSummary;
  }

  /** The line before the transfer plays out, then the carrier dials the destination; a carrier that refuses sends the caller straight back. */
  private async startTransfer(to: string, transfer: (to: string) => Promise<void>, message: string | undefined): Promise<void> {
    if (!(await this.transferLinePlayed(to, message))) return;
    try {
      await transfer(to);
      this.o.log.info({ to }, 'transfer started');
    } catch (error) {
      this.o.log.warn({ err: error, to }, 'the carrier could not start the transfer');
      if (this.transferring) this.transferring.failed = 'the phone line could not start it';
      this.resumeAfterTransfer();
    }
  }

  /** A transfer to `to` begins: the tool's `message` is said after the model's words, and both play out; false if the call or the transfer ended meanwhile. */
  private async transferLinePlayed(to: string, message: string | undefined): Promise<boolean> {
    this.transferring = { to, failed: null, returnTimer: undefined };
    this.timers.disarmInactivity();
    if (message) this.say(message);
    await this.voice.finished(SESSION_DEFAULTS.lastWordsTimeoutMs);
    return this.phase === 'live' && this.transferring?.to === to;
  }

  /** The call's timers: silence, the longest a call may last, the organization's guard. */
  private static timerReactions(s: CallSession): CallTimerEvents {
    return {
      remind() {
        const agent = s.o.agent;
        if (!agent.reminder_from_model) {
          s.say(agent.reminder_message ?? SESSION_DEFAULTS.reminderText);
          return;
        }
        const silentS = Math.round((agent.reminder_trigger_ms ?? agent.inactivity_timeout_ms) / 1000);
        s.modelReminder = true;
        s.model.answer([...s.history.messages, { role: 'system', content: `${REMINDER_NOTE_PREFIX} ${silentS} seconds. Say one short sentence to check whether they are still there.` }], s.userTurns);
      },
      inactive() {
        s.end('inactivity');
      },
      maxDuration() {
        s.end('max_duration_reached');
      },
      limitReached(reason) {
        s.end(reason);
      },
    };
  }

  // ---- helpers ----

  /** Words the session says without the model; the model's history gets what was heard of them. */
  private say(text: string): void {
    this.history.said(this.voice.sayAll(text), text);
  }

  /** Silence counts only while nobody speaks and nothing is being answered. */
  private armInactivityIfQuiet(): void {
    if (!this.voice.busy && !this.model.running && !this.caller.speaking) this.timers.armInactivity();
  }

  private notify(notice: SessionNotice): void {
    if (this.phase === 'ended') return;
    this.o.transport.notify(notice);
    if (this.listeners?.active) this.listeners.notice(notice);
  }

  private finalize(): void {
    if (this.phase === 'ended') return;
    this.phase = 'ended';
    const now = this.o.timers.now();
    this.voice.stop();
    const reason = this.endReason ?? { reason: 'error_service' as const, message: null };
    this.o.transport.notify({ type: 'call_ended', disconnection_reason: reason.reason });
    this.listeners?.notice({ type: 'call_ended', disconnection_reason: reason.reason });
    this.listeners?.end();
    this.o.transport.close(reason.reason);
    this.caller.close();
    this.o.onEnd({
      reason: reason.reason,
      message: reason.message,
      startTimestamp: this.clock.startWall,
      endTimestamp: now,
      transcript: this.transcript.messages,
      transcriptWithToolCalls: this.transcript.items,
      latency: this.latency.summary(),
      userTurns: this.userTurns,
      transfer: this.transferred,
    });
    this.finishedResolve();
  }
}
