// CallSession: the single owner of one call — its phase, its clock, and the one place its
// disconnection reason is decided. It owns five parts and wires what each reports to the others:
//   CallerInput  what the caller is saying (audio clock, VAD, recogniser, barge-in, end of turn)
//   AgentVoice   what the agent is saying (utterances, TTS, pacing, marks, words heard)
//   ModelTurn    the model's reply with its tools, one at a time, cancelled on interruption
//   Transcript   messages and tool items as the record keeps them; ChatHistory, what the model is told
//   CallTimers   silence and reminders, the longest a call may last, the organization's guard
// plus KeypadInput, which gathers the digits the caller presses into a turn, and CallLatency,
// which times each turn. Flows that take over the line (flow.ts) are collaborators: the voicemail
// drop (caller/voicemail-drop.ts) and the transfer (transfer/transfer-flow.ts) see the caller's
// side and answer with an intent, which act() carries out. Every part registers once for the
// teardown (teardown.ts). Interruption, end of turn, tools and the ending are events the parts
// report; the handlers below say who reacts, in order.
import { AGENT_DEFAULTS } from '../agents/schema.ts';
import { INTERNAL_SAMPLE_RATE } from '../audio/pcm.ts';
import type { DisconnectionReason } from '../records/record.ts';
import { publicLlmFailure } from '../llm/errors.ts';
import {
  agentVoiceOn,
  singleVoice,
  unheardVoiceEvents,
  type AgentVoice,
  type AgentVoiceEvents,
} from './agent/agent-voice.ts';
import type { Utterance } from './agent/utterance.ts';
import { CallClock } from './call-clock.ts';
import { CallTimers, type CallTimerEvents } from './call-timers.ts';
import { DEFAULT_BACKCHANNELS, isBackchannel } from './caller/backchannel.ts';
import { CallerInput, interruptionThresholdMs, type CallerEvents, type CallerTurn } from './caller/caller-input.ts';
import { endOfTurnPolicy } from './caller/end-of-turn.ts';
import { KEYPAD_TURN_PREFIX, KeypadInput, type KeypadEvents } from './caller/keypad.ts';
import { VoicemailDrop } from './caller/voicemail-drop.ts';
import type { FlowHost, FlowIntent, LineFlow } from './flow.ts';
import { CallLatency } from './latency.ts';
import { CallListeners, type CallListener } from './listeners.ts';
import { ChatHistory } from './model/history.ts';
import { ModelTurn, type ModelTurnEvents } from './model/model-turn.ts';
import type { ReplyOutcome } from './model/reply.ts';
import type { ModelTurnTaking } from './realtime/realtime-brain.ts';
import { Reminder } from './reminder.ts';
import type { SessionOptions, SessionResult } from './session-options.ts';
import { CallTeardown } from './teardown.ts';
import { Transcript } from './transcript.ts';
import { askTransferSummary } from './transfer/summary.ts';
import { TransferFlow } from './transfer/transfer-flow.ts';
import type { SessionNotice, TransportHandlers } from './transport.ts';

export type { SessionEngines, SessionOptions, SessionResult } from './session-options.ts';

export const SESSION_DEFAULTS = {
  /** Said when the recogniser failed while the caller spoke: the turn is lost, the call is not. */
  unheardText: "Sorry, I didn't catch that. Could you say it again?",
  apologyText: "I'm sorry, something went wrong on our side. Please call again later. Goodbye.",
  flowErrorText: "I'm sorry, I can't continue this call. Goodbye.",
  /** Longest wait for last words (apology, goodbye) to play before the call ends anyway. */
  lastWordsTimeoutMs: 15_000,
  /** How long a caller's hang-up waits for the words they said just before it to be read. */
  callerLastWordsMs: 3_000,
} as const;

type Phase = 'created' | 'live' | 'ending' | 'ended';

export class CallSession {
  private readonly clock: CallClock;
  private readonly caller: CallerInput;
  /** null when the agent turned keypad input off. */
  private readonly keypad: KeypadInput | null;
  private readonly voice: AgentVoice;
  private readonly model: ModelTurn;
  private readonly transcript: Transcript;
  private readonly history: ChatHistory;
  private readonly timers: CallTimers;
  private readonly latency: CallLatency;
  private readonly teardown: CallTeardown;
  private readonly reminder: Reminder;
  /** An answering machine on an outbound call, and the message left on it. */
  private readonly voicemail: VoicemailDrop;
  /** The transfer_call the model makes, and the carrier's reports on it (transfer/carrier.ts). */
  readonly transfer: TransferFlow;
  /** The flows that may take over the line; each sees the caller's side. */
  private readonly flows: readonly LineFlow[];
  /** Made for the first listener through the API: a call nobody listens to carries none of it. */
  private listeners: CallListeners | undefined;
  private phase: Phase = 'created';
  private userTurns = 0;
  private transferred: { destination: string; at: number } | null = null;
  /** Words of the agent's the caller's last interruption cut off, until its words show whether it meant it. */
  private cutShort = '';
  /** The greeting said at the callee's first pause: it answers the turn under way, which the model does not. */
  private greetedTurn: Utterance | null = null;
  /** The model answered by itself (its own turn detection) and the caller's words are being read. */
  private modelAnswered = false;
  private endReason: { reason: DisconnectionReason; message: string | null } | null = null;
  /** When the caller hung up (the end of the call), while their last words are still read. */
  private hungUpAt: number | null = null;
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
    this.teardown = new CallTeardown((error) => o.log.error({ err: error }, 'a part of the call failed to stop'));
    const session = this;
    const modelTurns = o.modelTurns;
    this.caller = this.teardown.add(
      new CallerInput({
        rate,
        sttRate: o.sttSampleRate ?? rate,
        clock: this.clock,
        timers: o.timers,
        engines: o.engines,
        endOfTurn: endOfTurnPolicy(o.agent),
        // With the model's own turn detection its speech start is the barge-in (modelTurnReactions), not the VAD's,
        // while it would report one.
        interruptionThresholdMs: interruptionThresholdMs(o.agent.interruption_sensitivity),
        ...(modelTurns ? { modelReportsSpeech: () => modelTurns.reportsCallerSpeech() } : {}),
        agentBusy() {
          return session.agentCuttable;
        },
        isAcknowledgement(text) {
          return isBackchannel(text, o.agent.backchannel_words ?? DEFAULT_BACKCHANNELS);
        },
        lastAgentWords() {
          return session.transcript.lastAgentWords();
        },
        outbound: o.outbound ?? false,
        recording: o.recorder,
        noiseSuppression: o.agent.noise_suppression,
        events: CallSession.callerReactions(this),
        log: o.log,
      }),
    );
    const dtmf = o.agent.dtmf;
    const keypad = {
      terminator: dtmf ? dtmf.terminator : AGENT_DEFAULTS.dtmfTerminator,
      maxDigits: dtmf?.max_digits ?? null,
      timeoutMs: dtmf?.timeout_ms ?? AGENT_DEFAULTS.dtmfTimeoutMs,
    };
    this.keypad =
      dtmf?.enabled === false
        ? null
        : this.teardown.add(new KeypadInput(keypad, o.timers, CallSession.keypadReactions(this)));
    const voiceOf = {
      voices: o.engines.voices ?? singleVoice(o.agent.voice, o.engines.tts),
      timers: o.timers,
      clock: this.clock,
      pacerWakeups: o.pacerWakeups,
    };
    this.voice = agentVoiceOn(
      o.transport,
      voiceOf,
      CallSession.voiceReactions(this),
      () => session.model.signal,
      o.recorder,
    );
    this.teardown.add({ close: () => this.voice.stop() });
    this.model = new ModelTurn({
      brain: o.brain,
      voice: this.voice,
      clock: this.clock,
      log: o.log,
      events: CallSession.modelReactions(this),
    });
    this.timers = this.teardown.add(
      new CallTimers({
        timers: o.timers,
        clock: this.clock,
        inactivityTimeoutMs: o.agent.inactivity_timeout_ms,
        reminderTriggerMs: o.agent.reminder_trigger_ms,
        reminderMaxCount: o.agent.reminder_max_count,
        maxDurationMs: o.agent.max_duration_ms,
        guard: o.guard,
        events: CallSession.timerReactions(this),
      }),
    );
    this.teardown.add({ stop: () => this.model.cancel() });
    const ask = (note: string): void =>
      this.model.answer([...this.history.messages, { role: 'system', content: note }], this.userTurns);
    this.reminder = new Reminder({ agent: o.agent, say: (text) => this.say(text), ask, log: o.log });
    const host: FlowHost = {
      get live() {
        return session.phase === 'live';
      },
      act(intent) {
        session.act(intent);
      },
    };
    const callerSpeaking = (): boolean => this.caller.speaking;
    this.voicemail = new VoicemailDrop({
      rate,
      handling: o.voicemail ?? null,
      timers: o.timers,
      host,
      callerSpeaking,
      greeting: o.agent.begin_message.trim(),
      log: o.log,
    });
    this.transfer = new TransferFlow({
      tools: o.agent.tools,
      cold: o.transfer,
      warm: o.warmTransfer,
      voice: this.voice,
      consultVoice: (line) =>
        agentVoiceOn(
          line,
          voiceOf,
          unheardVoiceEvents((error) => o.log.warn({ err: error }, 'the transfer summary could not be spoken')),
          () => undefined,
        ),
      summary: () => askTransferSummary(o.brain, this.history.messages, () => this.clock.seconds(), this.finished),
      timers: o.timers,
      host,
      log: o.log,
    });
    this.flows = [this.voicemail, this.transfer];
    o.modelTurns?.listen(CallSession.modelTurnReactions(this));
    for (const flow of this.flows) this.teardown.add(flow);
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
    // The greeting starts while the recogniser loads: the caller hears the agent at once. On an outbound call that
    // looks for a machine it waits for the callee's "Hello?" instead (caller/voicemail-drop.ts).
    const begin = this.o.agent.begin_message.trim();
    if (begin && !this.voicemail.holdsGreeting) this.say(begin);
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
    if (reason === 'user_hangup' && wasLive) {
      // Nobody is listening any more: the agent stops where playback stood, but what the caller said just before
      // hanging up is still read into the transcript (never answered).
      this.hungUpAt = this.o.timers.now();
      const lastWords = this.caller.lastWords(SESSION_DEFAULTS.callerLastWordsMs);
      this.teardown.stop();
      this.voice.stop();
      void lastWords.then(() => this.finalize());
      return;
    }
    this.teardown.stop();
    if (!wasLive || options.now) {
      // Nobody is listening any more (or must not be served any more): what was still to play is cut where playback
      // stood.
      this.finalize();
      return;
    }
    if (options.say) {
      // Last words replace whatever was playing (hold music too), and nothing cuts them.
      this.voice.interrupt({ force: true });
      this.voice.sayAll(options.say, { interruptible: false });
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

  /** The carrier's own answering-machine detection found a machine (Twilio AMD). */
  carrierFoundMachine(): void {
    if (this.phase === 'live') this.voicemail.carrierFound(this.clock.sinceStart());
  }

  /** A note given through the API: the model sees it from its next turn. */
  addContext(content: string): void {
    if (this.phase === 'live') this.history.note(content);
  }

  /** A flow's intent, carried out while the call is live. */
  private act(intent: FlowIntent): void {
    if (this.phase !== 'live') return;
    switch (intent.kind) {
      case 'take_turn':
        this.timers.disarmInactivity();
        if (intent.cut) {
          this.cutShort = '';
          this.interrupt();
        }
        return;
      case 'say':
        this.say(intent.text);
        return;
      case 'greet': {
        const greeting = this.voice.sayAll(intent.text);
        this.history.said(greeting, intent.text);
        this.greetedTurn = intent.answering && this.caller.speaking ? greeting : null;
        return;
      }
      case 'give_back':
        // The caller's audio while the flow had the line is caught up first: their next words start a turn.
        this.caller.catchUp();
        this.history.note(intent.note);
        this.model.answer(this.history.messages, this.userTurns);
        return;
      case 'end':
        if (intent.transferred) this.transferred = intent.transferred;
        this.end(
          intent.reason,
          intent.say ? { say: intent.say, message: intent.message } : { message: intent.message },
        );
    }
  }

  // ---- what the line and the parts report, and who reacts ----
  // Handlers are method shorthand, never arrows in object literals: tsx names such an arrow at run
  // time (esbuild's keepNames), which gives every call ~0.3 KiB more heap per handler.

  /** The line: caller audio, playback marks, keypad digits, hang-up. */
  private static lineReactions(s: CallSession): TransportHandlers {
    return {
      audio(frame) {
        s.caller.audio(frame);
        if (s.listeners?.active) s.listeners.caller(frame);
      },
      mark(name) {
        s.voice.mark(name);
      },
      dtmf(digit) {
        if (s.keypad && s.phase === 'live') s.keypad.press(digit);
        else s.o.log.debug({ digit }, 'keypad digit ignored');
      },
      hangup(message) {
        s.end('user_hangup', message === undefined ? {} : { message });
      },
    };
  }

  /** The caller side: speech, interruption, the end of a turn, a failure to hear. */
  private static callerReactions(s: CallSession): CallerEvents {
    return {
      speechStarted(at) {
        s.timers.disarmInactivity();
        for (const flow of s.flows) flow.speechStarted?.(at * 1000);
      },
      speechEnded(at) {
        for (const flow of s.flows) flow.speechEnded?.(at * 1000);
      },
      heard(frame, at) {
        for (const flow of s.flows) flow.audio?.(frame, at * 1000);
      },
      judged(at) {
        for (const flow of s.flows) flow.judged?.(at * 1000);
      },
      interruption() {
        // Until the caller's words are known, what was cut may yet be resumed.
        s.cutShort = s
          .interrupt()
          .map((u) => u.unsaid)
          .filter(Boolean)
          .join(' ');
      },
      partial(text) {
        for (const flow of s.flows) flow.words?.(text, s.clock.sinceStart());
        s.notify({ type: 'transcript', role: 'user', text, final: false, turn: s.userTurns + 1 });
      },
      recognised(ms) {
        s.latency.recognised(ms);
        s.o.providers?.served('stt', null, 'asr', ms);
      },
      userTurn(turn) {
        s.onUserTurn(turn);
      },
      noTurn() {
        s.greetedTurn = null;
        // The model answered speech the recogniser read no words in: its answer is heard all the same.
        if (s.takeModelAnswer()) return;
        // The sound that stopped the agent held no words (a cough, a door): it goes on where it stopped.
        if (s.resumeCutShort()) return;
        s.armInactivityIfQuiet();
      },
      unheard() {
        s.greetedTurn = null;
        if (s.phase !== 'live' || s.flows.some((flow) => flow.holdsLine)) return;
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
        if (s.agentCuttable) {
          s.cutShort = '';
          s.interrupt();
        }
      },
      entered(entry) {
        if (s.phase !== 'live') return;
        s.onUserTurn(
          {
            text: entry.digits,
            startAt: s.clock.seconds(entry.firstAt),
            endAt: s.clock.seconds(entry.lastAt),
            speechEndWall: entry.lastAt,
          },
          true,
        );
      },
    };
  }

  /**
   * A speech-to-speech model's own turn detection: the caller's speech it heard over the agent is a barge-in, as the
   * session's own; its answering ends the caller's turn (the recogniser reads its words, then the reply takes the
   * model's answer), or, with no turn heard here, is the reply at once.
   */
  private static modelTurnReactions(s: CallSession): ModelTurnTaking {
    return {
      callerStarted() {
        if (s.phase !== 'live') return;
        s.timers.disarmInactivity();
        s.modelAnswered = false;
        s.caller.confirmSpeech();
        if (s.agentCuttable) s.interrupt();
      },
      answering() {
        if (s.phase !== 'live' || s.flows.some((flow) => flow.holdsLine)) return;
        s.modelAnswered = true;
        s.caller.endTurnNow(() => s.takeModelAnswer());
      },
    };
  }

  /** The model's own answer, taken as the reply when no caller turn will be; false when there is none. */
  private takeModelAnswer(): boolean {
    if (!this.modelAnswered || this.phase !== 'live') return false;
    this.modelAnswered = false;
    this.cutShort = '';
    this.model.cancel();
    this.model.answer(this.history.messages, this.userTurns);
    return true;
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
    this.reminder.callerSpoke();
    this.userTurns++;
    this.transcript.addUser(turn.text, turn.startAt, turn.endAt, keypad);
    if (!keypad) this.o.providers?.served('stt', this.userTurns);
    this.notify({ type: 'transcript', role: 'user', text: turn.text, final: true, turn: this.userTurns });
    if (!keypad) for (const flow of this.flows) flow.words?.(turn.text, this.clock.sinceStart());
    // A turn while a flow has the line (a machine's greeting, a caller being transferred) is kept, never answered.
    // A greeting the callee talked over answered none of it: the model answers the turn (a menu read out on).
    const greeted = keypad || this.greetedTurn?.interrupted ? null : this.greetedTurn;
    this.greetedTurn = null;
    if (this.flows.some((flow) => flow.holdsLine) || this.phase !== 'live') return;
    this.modelAnswered = false;
    if (greeted) {
      // The callee's "Hello?" that the greeting answered: the model sees it before the greeting and does not answer it.
      this.history.user(turn.text, greeted);
      return;
    }
    this.history.user(keypad ? KEYPAD_TURN_PREFIX + turn.text : turn.text);
    // Only an acknowledgement stopped the agent: it finishes what it was saying instead of answering it (unless the
    // model's own turn detection took it for a turn: it answers it).
    if (
      !keypad &&
      !this.o.modelTurns &&
      this.cutShort &&
      isBackchannel(turn.text, this.o.agent.backchannel_words ?? DEFAULT_BACKCHANNELS)
    ) {
      this.resumeCutShort();
      return;
    }
    this.cutShort = '';
    // The caller added to a turn the model was still answering: answer everything at once.
    this.model.cancel();
    this.latency.answering(this.userTurns, turn.speechEndWall);
    this.model.answer(this.history.messages, this.userTurns);
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
        // Heard in full or cut: the transcript and the history keep the words heard.
        if (s.transcript.agentEnded(u.id, u.text, s.clock.seconds(from), s.clock.seconds(at))) {
          s.notify({ type: 'transcript', role: 'agent', text: u.text, final: true, turn: s.userTurns });
        }
        if (u.interrupted) s.history.interrupted(u);
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
        s.o.providers?.served('voice', s.userTurns, 'tts', ms);
      },
      failed(error) {
        s.o.log.error({ err: error }, 'speech synthesis failed');
        s.end('error_service', { message: 'The speech synthesizer failed.' });
      },
    };
  }

  /** The model's turn: its timing, its tools, and how the reply ended. */
  private static modelReactions(s: CallSession): ModelTurnEvents {
    return {
      llmTiming(timing, turn) {
        s.latency.model(timing, turn);
        const providers = s.o.providers;
        if (providers) {
          providers.served('llm', turn);
          if (timing.firstTokenAt !== null)
            providers.served('llm', null, 'llm', timing.firstTokenAt - timing.requestSentAt);
          if (timing.firstChunkAt !== null)
            providers.served('llm', null, 'llm_speakable', timing.firstChunkAt - timing.requestSentAt);
        }
      },
      toolStarted(call) {
        s.o.log.debug({ tool: call.name }, 'tool started');
      },
      toolItem(item) {
        s.transcript.addToolItem(item);
        if (item.role === 'tool_call_invocation')
          s.notify({ type: 'tool_call', name: item.name, arguments: item.arguments });
      },
      toolWait(line) {
        // Heard by the caller and kept in the transcript; the model's history has its reply only.
        s.voice.sayAll(line);
      },
      toolFinished(run) {
        if (run.latencyMs !== null) s.latency.tool(run.latencyMs);
        s.notify({
          type: 'tool_result',
          name: run.invocation.name,
          successful: run.result.successful,
          content: run.result.content.slice(0, 500),
        });
      },
      finished(outcome, utterances) {
        s.history.replied(outcome, utterances);
        if (!s.reminder.replyEnded(outcome, s.phase === 'live') && s.phase === 'live') s.actOn(outcome);
      },
    };
  }

  /** How a reply ended decides whether the call goes on. */
  private actOn(outcome: ReplyOutcome): void {
    switch (outcome.kind) {
      case 'end_call':
        this.end('agent_hangup');
        return;
      case 'transfer_call':
        this.transfer.start(outcome.call.name, outcome.transferTo);
        return;
      case 'llm_error':
        this.o.log.error({ code: outcome.error?.code, err: outcome.error }, 'language model failed');
        this.end('error_service', {
          say: SESSION_DEFAULTS.apologyText,
          message: `The language model failed: ${outcome.error ? publicLlmFailure(outcome.error) : 'unknown error'}.`,
        });
        return;
      case 'flow_error':
        this.end('flow_error', { say: SESSION_DEFAULTS.flowErrorText, message: `${outcome.code}: ${outcome.detail}` });
        return;
      default:
        this.armInactivityIfQuiet();
    }
  }

  /** The call's timers: silence, the longest a call may last, the organization's guard. */
  private static timerReactions(s: CallSession): CallTimerEvents {
    return {
      remind() {
        s.reminder.remind();
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

  /** The agent is talking, or about to (a reply under way). */
  private get agentTalking(): boolean {
    return this.voice.busy || this.model.running;
  }

  /** The agent is talking and the caller may cut it: speech and keys then stop it. */
  private get agentCuttable(): boolean {
    return this.agentTalking && this.voice.interruptible;
  }

  /** Words the session says without the model; the model's history gets what was heard of them. */
  private say(text: string): void {
    this.history.said(this.voice.sayAll(text), text);
  }

  /** Silence counts only while nobody speaks and nothing is being answered. */
  private armInactivityIfQuiet(): void {
    if (!this.agentTalking && !this.caller.speaking) this.timers.armInactivity();
  }

  private notify(notice: SessionNotice): void {
    if (this.phase === 'ended') return;
    this.o.transport.notify(notice);
    if (this.listeners?.active) this.listeners.notice(notice);
  }

  /** Each stage's latency, and which provider served which turns (none without providers). */
  private latencyWithProviders(): SessionResult['latency'] {
    const stages = this.latency.summary();
    const providers = this.o.providers?.summary(this.clock.startWall) ?? null;
    if (!providers) return stages;
    return { ...stages, providers };
  }

  private finalize(): void {
    if (this.phase === 'ended') return;
    this.phase = 'ended';
    // A caller's hang-up ends the call when it came, however long their last words took to read.
    const now = this.hungUpAt ?? this.o.timers.now();
    this.teardown.close();
    const reason = this.endReason ?? { reason: 'error_service' as const, message: null };
    this.o.transport.notify({ type: 'call_ended', disconnection_reason: reason.reason });
    this.listeners?.notice({ type: 'call_ended', disconnection_reason: reason.reason });
    this.listeners?.end();
    this.o.transport.close(reason.reason);
    this.o.onEnd({
      reason: reason.reason,
      message: reason.message,
      startTimestamp: this.clock.startWall,
      endTimestamp: now,
      transcript: this.transcript.messages,
      transcriptWithToolCalls: this.transcript.items,
      latency: this.latencyWithProviders(),
      userTurns: this.userTurns,
      transfer: this.transferred,
    });
    this.finishedResolve();
  }
}
