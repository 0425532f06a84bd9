// What the caller is saying: the inbound audio clock, the onset kept from before speech, the VAD
// fed in order, the recogniser fed while the caller speaks, talking over the agent (barge-in), and
// the end of each turn (a pluggable policy). It reports what it hears as events; the session
// decides what follows.
import type { Logger } from 'pino';
import { FRAME_MS } from '../../audio/pcm.ts';
import { Resampler } from '../../audio/resampler.ts';
import { openRnnoise, type RnnoiseDenoiser } from '../../speech/denoise/rnnoise.ts';
import type { SttResult, SttStream, SttStreamEvents, SttTurnEnd, VadEvent, VadStream } from '../../speech/types.ts';
import type { TimerHandle, Timers } from '../../timers.ts';
import type { CallClock } from '../call-clock.ts';
import { providerDeadline, type FallbackReason } from '../providers.ts';
import { endsInDigit, recogniserDecides, type EndOfTurnPolicy } from './end-of-turn.ts';
import { CALLER_PACE, CallerPace } from './caller-pace.ts';
import { FrameHistory } from './frame-history.ts';
import { VadFeed } from './vad-feed.ts';

export const CALLER_DEFAULTS = {
  /** Audio the recogniser gets from before the speech start VAD reported (the onset). */
  prerollMs: 300,
  /** Recent inbound audio kept so a late VAD verdict can still hand the onset over. */
  historyMs: 3000,
  /**
   * Caller audio kept for the VAD while the engines open: a cold start on a busy machine took 11 s,
   * and a caller who speaks meanwhile must still be heard.
   */
  heldWhileOpeningMs: 30_000,
  /**
   * After the recogniser fails with none left to move to, the waits before each try at opening another of the same
   * (the last one repeats). With a fallback after it, the next recogniser is opened at once instead.
   */
  reopenDelaysMs: [0, 1_000, 5_000],
  /**
   * Speech over the agent reached the interruption threshold before any reading of it: the longest the cut waits for
   * the one asked for, so that an acknowledgement being said does not stop the agent. A reading of a second of speech
   * took Moonshine 0.3-0.7 s on this project's 2-core machine under load (300 ms cut "Right, okay," before it was
   * read); a cut-in still stops the agent within threshold + this, inside the 2 s test/e2e/call-endings.test.ts holds.
   */
  ackReadWaitMs: 1_000,
  /** An acknowledgement over the agent paused: the longest its last words are waited for before it is let go. */
  ackSettleMs: 2_000,
  /**
   * A word shorter than the threshold over the agent paused ("Stop."): the longest its reading is waited for before it
   * is taken for a sound. The agent talks on meanwhile, so waiting costs the caller nothing. 2 s lost "Stop." in 5 of 5
   * runs beside three CPU burners: they kept the recogniser's threads (then at nice 10) from reading it in time.
   */
  shortReadWaitMs: 6_000,
  /**
   * Speech over the agent's answer that begins within goingOnWithinMs of the agent taking the turn: the caller going on
   * with a turn the agent took for over, or both starting at once. It stops the agent once it lasts this long (a word's
   * onset, not a click), not the interruption threshold, and without waiting for a reading: at the threshold and the
   * reading's wait, the agent talked over the rest of the caller's sentence for 0.6-1.6 s, and a word shorter than the
   * threshold ("…an appointment." … "Tomorrow.") was let go as a backchannel and lost. Acknowledgements this early in
   * an answer are rare; one that stops the agent here is read as one, and the agent says the rest of what it was
   * saying.
   */
  goingOnMs: 200,
  /** How soon after the agent took the turn speech over its answer counts as going on (goingOnMs). */
  goingOnWithinMs: 2_000,
} as const;

/**
 * How far the VAD may run behind the line with an end of turn still taken as judged: it follows a frame behind (and its
 * inference may take most of another), which the end of turn never waited for.
 */
const VAD_FOLLOWS_S = (2 * FRAME_MS) / 1000;

/** interruption_sensitivity 0..1 → how long the caller must talk over the agent to interrupt it. */
export function interruptionThresholdMs(sensitivity: number): number {
  return Math.round(1000 - 800 * Math.min(1, Math.max(0, sensitivity)));
}

/** One finished turn of the caller's, on the call's clock. */
export interface CallerTurn {
  text: string;
  /** Seconds from the call's start (the inbound audio clock). */
  startAt: number;
  endAt: number;
  /** Wall time the caller stopped speaking (voice-to-voice latency counts from it). */
  speechEndWall: number;
}

export interface CallerEvents {
  /** The caller started speaking, or went on after a pause, at `at` (seconds from the call's start). */
  speechStarted(at: number): void;
  /** The caller's speech paused at `at`, whether or not it makes a turn. */
  speechEnded(at: number): void;
  /** The caller talked over the agent past the interruption threshold. */
  interruption(): void;
  /** The words recognised so far in the turn under way. */
  partial(text: string): void;
  /** The recogniser's time for a turn that ended: from the end-of-turn decision to its final text. */
  recognised(ms: number): void;
  userTurn(turn: CallerTurn): void;
  /** Sound that made no turn: a backchannel under the agent, or noise with no words in it. */
  noTurn(): void;
  /**
   * One caller frame as the line sent it (before noise suppression), as it arrives, beginning at `at` on the inbound
   * clock: for what needs the sound itself at once (a machine's beep).
   */
  heard(frame: Int16Array, at: number): void;
  /**
   * The VAD has judged the caller's audio up to `at`, after reporting that audio's speechStarted/speechEnded: a
   * listener that times silences by those events measures them to here, on the VAD's clock, however far behind the
   * line it runs (on a loaded machine, seconds).
   */
  judged(at: number): void;
  /** The VAD failed: the call cannot hear the caller any more. */
  failed(message: string): void;
  /**
   * The recogniser failed during the caller's turn: that turn is lost (another recogniser is being
   * opened), and the call goes on. The session asks the caller to say it again.
   */
  unheard(): void;
}

export interface CallerEngines {
  openVad(): Promise<VadStream>;
  /** Opens the recogniser serving now. */
  openStt(events: SttStreamEvents): Promise<SttStream>;
  /** The recogniser serving failed: true when the next one now serves, false when none is left. */
  sttFailed?(reason: FallbackReason): boolean;
  /**
   * How long the recogniser serving may take over a turn's final text; null: as long as it takes, and no first-result
   * deadline either (the last recogniser).
   */
  sttFinalDeadlineMs?(): number | null;
}

export interface CallerInputOptions {
  /** Rate of the inbound frames (the line's: 8 kHz on a phone). */
  rate: number;
  /** Rate the recogniser is opened at; frames are resampled to it when it differs. */
  sttRate: number;
  clock: CallClock;
  timers: Timers;
  engines: CallerEngines;
  endOfTurn: EndOfTurnPolicy;
  /**
   * null: speech over the agent never interrupts it by itself, only once confirmSpeech() says so (the model's own
   * turn detection heard it); unconfirmed at its end, it is no turn.
   */
  interruptionThresholdMs: number | null;
  /**
   * With the model's own turn detection: whether the model would say now that the caller started speaking
   * (confirmSpeech). Speech over the agent that starts while it would not (Gemini's turn complete, its audio still
   * playing) is judged by interruptionThresholdMs instead of waiting for a word that never comes.
   */
  modelReportsSpeech?: () => boolean;
  /** Whether the agent holds the floor (speaking or answering): speech must then pass the threshold to interrupt. */
  agentBusy(): boolean;
  /** Words that only acknowledge ("uh-huh", "right"): speech over the agent read as these never stops it. */
  isAcknowledgement(text: string): boolean;
  /** The agent's last words so far (what the caller is answering); null before it spoke. */
  lastAgentWords?(): string | null;
  /** A call the agent placed: words before the agent spoke are the callee picking up (CallerPause.pickedUp). */
  outbound?: boolean | undefined;
  recording?: { callerAudio(frame: Int16Array, offsetMs: number): void } | undefined;
  /** RNNoise on the caller's audio before the VAD and the recogniser (the recording keeps it as it came). */
  noiseSuppression?: 'off' | 'rnnoise' | undefined;
  events: CallerEvents;
  log: Logger;
}

/** A frame held for the VAD, and when it ended (seconds on the call's clock). */
interface HeldFrame {
  frame: Int16Array;
  endAt: number;
}

/** The caller's current stretch of speech, on the call's clock (seconds). */
interface Speech {
  startAt: number;
  endAt: number | null;
  /** A turn (or an interruption), not yet dismissable as a backchannel under the agent. */
  confirmed: boolean;
  /** The recogniser's reading of everything up to the pause under way; null until one arrives after the pause began. */
  pauseWords: string | null;
  /** The reading at the latest pause of this turn the caller spoke on from; null before their first such pause. */
  resumedWords: string | null;
  /** That reading was asked for and has not come yet. */
  wordsPending: boolean;
  /**
   * Over the agent, past the threshold, read so far as acknowledgements only: the agent was not stopped. Words that are
   * not acknowledgements stop it then; at its pause, its last reading says whether it was a turn.
   */
  acknowledging: boolean;
  /** At the threshold no reading was there yet: one was asked for, and the cut waits for it (ackReadWaitMs). */
  readAsked: boolean;
  /**
   * Over the agent, it paused shorter than the threshold: a sound, an "uh-huh", or a word that means it ("Stop.",
   * "No."). Its reading, asked for at the pause, tells them apart.
   */
  shortRead: boolean;
  /**
   * The recogniser's own verdict that the turn is over, with the reading it came with: words read
   * after it (the caller went on) withdraw it; the same words written again do not.
   */
  recogniserEnded: (SttTurnEnd & { reading: SttResult }) | null;
  /** The recogniser's latest reading of this speech (while it is said too); null until one comes. */
  lastReading: SttResult | null;
  /** The model's own turn detection ended the turn: it ends at the VAD's pause, without waiting. */
  endedByModel: boolean;
  /** At the latest decision, the recogniser's verdict made the wait shorter than the words and silence alone. */
  recogniserDecides: boolean;
  /** The recogniser has given a result (a partial, a verdict) since this speech began. */
  resultHeard: boolean;
  /** At the latest decision the policy would have ended the turn short of its longest wait (its inDoubt). */
  inDoubt: boolean;
  /** Begun over the agent's answer soon after it took the turn: the caller going on (CALLER_DEFAULTS.goingOnMs). */
  goingOn: boolean;
}

export class CallerInput {
  private vad: VadStream | null = null;
  private stt: SttStream | null = null;
  private feed: VadFeed<number> | null = null;
  private denoiser: RnnoiseDenoiser | null = null;
  private stopped = false;
  private inboundSamples = 0;
  /** Seconds between the call's start and the first inbound frame: VAD times are on the inbound clock. */
  private audioOffset = 0;
  /** The inbound sample the VAD's clock starts at: the first frame it was given. */
  private vadStartSample = 0;
  /**
   * Audio the VAD has yet to judge, in order, while the engines open and then while the VAD
   * catches up: each frame goes on to the recogniser (or the onset) only once the VAD has judged
   * it, so a caller who spoke during a slow start is heard whole. null once caught up: frames then
   * go on as they arrive and the VAD follows a frame behind.
   */
  private backlog: HeldFrame[] | null = [];
  private backlogSamples = 0;
  /**
   * The first recogniser, while it opens (the first call a process takes loads its model: seconds, tens on a loaded
   * machine). The VAD does not wait for it: speech over the greeting stops the agent meanwhile, and what the caller
   * says is held for it (sttHeld, at the recogniser's rate) and read once it opens.
   */
  private sttOpening: Promise<SttStream> | null = null;
  private sttHeld: Int16Array[] = [];
  private sttHeldSamples = 0;
  /** The turn under way ended while the recogniser was opening: it is read once it has. */
  private readOnOpen = false;
  private readonly recent: FrameHistory;
  private readonly sttResampler: Resampler | null;
  private speech: Speech | null = null;
  /** A turn the failed recogniser was hearing: its end makes no turn (the caller was asked again). */
  private lostSpeech: Speech | null = null;
  /** Consecutive failed recognisers (reset once one reads a turn): sets the wait before the next. */
  private recogniserFailures = 0;
  private reopenTimer: TimerHandle | undefined;
  /** A turn that ended is being read (its final text not in yet). */
  private reading = false;
  /** That reading, while it runs: a caller who hangs up meanwhile still has it in the transcript (lastWords). */
  private readingTurn: Promise<void> | null = null;
  /** The caller hung up during a turn: its reading is still given as a turn once the input has stopped. */
  private readAfterHangUp = false;
  private endpointTimer: TimerHandle | undefined;
  /** How far the VAD has judged the caller's audio (seconds on the call's clock). */
  private judgedAt = 0;
  /**
   * An end of turn that came due while the VAD was still behind the line: it ends the turn once the VAD has judged the
   * audio up to `dueAt` with no speech start, while `token` is still the endpoint timer.
   */
  private endDue: { token: TimerHandle; dueAt: number } | null = null;
  private bargeTimer: TimerHandle | undefined;
  /** The streaming recogniser's first-result deadline, running while the caller speaks and it has given nothing. */
  private firstResultDeadline: { clear(): void } | null = null;
  /** How long this caller pauses within a turn: all of their latest pauses, waited after words in doubt. */
  private readonly pace = new CallerPace('longest');
  /**
   * How long this caller pauses between groups of digits, apart: a caller who stops for a second to think mid-sentence
   * may read a number out with short breaths, and a number of no known length should not wait out their thinking.
   */
  private readonly numberPace = new CallerPace('usual');
  /**
   * The caller's last turn, which the agent is answering, until that answer is talked over: when it ended and when the
   * agent took it (read and handed on), in audio seconds, and whether it ended in a digit (its pause, talked over, was
   * one between groups).
   */
  private answering: { endAt: number; takenAt: number; inDigits: boolean } | null = null;
  /** A hang-up waits for the VAD to judge what came before it (lastWords). */
  private whenJudged: (() => void) | null = null;
  /** The model ended a turn at `at` (audio seconds) before the VAD had judged that far (endTurnNow). */
  private modelEnded: { at: number; noTurn: () => void } | null = null;

  constructor(private readonly o: CallerInputOptions) {
    this.recent = new FrameHistory(CALLER_DEFAULTS.historyMs / FRAME_MS, (o.rate * FRAME_MS) / 1000);
    this.sttResampler = o.sttRate === o.rate ? null : new Resampler(o.rate, o.sttRate);
  }

  /** The caller is in the middle of a turn (speaking, or paused shorter than the end of turn). */
  get speaking(): boolean {
    return this.speech !== null;
  }

  /**
   * Opens the VAD, the recogniser and the noise suppressor if asked for; throws if one fails. The VAD judges the audio
   * once it and the noise suppressor are open; the recogniser hears what it missed when it opens (sttOpening).
   */
  async open(): Promise<void> {
    const recogniser = this.openFirstRecogniser();
    // Awaited below, once the VAD is open: a recogniser that fails first must not count as an unhandled rejection.
    recogniser.catch(() => undefined);
    let vad: VadStream;
    let denoiser: RnnoiseDenoiser | null;
    try {
      [vad, denoiser] = await Promise.all([
        this.o.engines.openVad(),
        this.o.noiseSuppression === 'rnnoise' ? openRnnoise(this.o.rate) : null,
      ]);
    } catch (error) {
      void recogniser.then((stream) => stream.close()).catch(() => undefined);
      throw error;
    }
    this.vad = vad;
    this.denoiser = denoiser;
    if (this.stopped) {
      // The call ended while the engines opened.
      void recogniser.then((stream) => stream.close()).catch(() => undefined);
      this.close();
      return;
    }
    this.feed = new VadFeed(
      vad,
      (events, endAt) => this.onVadEvents(events, endAt),
      (error) => {
        this.o.log.error({ err: error }, 'voice activity detection failed');
        this.o.events.failed('Voice activity detection failed.');
      },
    );
    // The VAD starts with what came meanwhile, and its clock at that audio's first sample.
    this.vadStartSample = this.inboundSamples - this.backlogSamples;
    if (!this.backlog?.length) this.backlog = null;
    for (const held of this.backlog ?? []) this.feed.push(held.frame, held.endAt);
    this.sttOpening = recogniser;
    let stt: SttStream;
    try {
      stt = await recogniser;
    } finally {
      this.sttOpening = null;
    }
    if (this.stopped) {
      void stt.close().catch(() => undefined);
      return;
    }
    this.stt = stt;
    for (const samples of this.sttHeld) stt.push(samples);
    this.dropHeldForStt();
    if (this.readOnOpen) {
      this.readOnOpen = false;
      this.readTurn();
    }
  }

  private dropHeldForStt(): void {
    this.sttHeld = [];
    this.sttHeldSamples = 0;
  }

  /** The first recogniser that opens: one that cannot hands the call to the next, while there is one. */
  private async openFirstRecogniser(): Promise<SttStream> {
    for (;;) {
      try {
        return await this.openRecogniser();
      } catch (error) {
        if (this.stopped || !this.o.engines.sttFailed?.('connect')) throw error;
        this.o.log.warn({ err: error }, 'speech recogniser could not be opened; opening the next one');
      }
    }
  }

  private openRecogniser(): Promise<SttStream> {
    let stream: SttStream | null = null;
    const opening = this.o.engines.openStt({
      partial: (result) => {
        if (stream !== this.stt) return;
        this.heardResult();
        this.onPartial(result);
      },
      endOfTurn: (signal) => {
        if (stream !== this.stt) return;
        this.heardResult();
        this.onRecogniserEnded(signal);
      },
      // A recogniser that dies (a worker, the machine's recogniser process) costs the turn it was
      // hearing, not the call: another one is opened.
      error: (error) => {
        if (stream !== null && stream === this.stt) this.recogniserFailed(error);
      },
    });
    return opening.then((opened) => (stream = opened));
  }

  /**
   * The recogniser failed: the turn it was hearing is lost, and another recogniser is opened: the next one of the
   * agent's at once, or, with none left, the same kind again after a wait.
   */
  private recogniserFailed(error: unknown, reason: FallbackReason = 'error'): void {
    if (this.stopped) return;
    this.o.log.warn({ err: error }, 'speech recogniser failed; the turn it was hearing is lost, opening another');
    if (this.o.engines.sttFailed?.(reason)) this.recogniserFailures = 0;
    this.clearFirstResultDeadline();
    const failed = this.stt;
    this.stt = null;
    if (failed) void failed.close().catch(() => undefined);
    if (this.speech?.confirmed) {
      this.lostSpeech = this.speech;
      this.o.events.unheard();
    }
    this.scheduleReopen();
  }

  private scheduleReopen(): void {
    if (this.stopped || this.reopenTimer !== undefined) return;
    const delays = CALLER_DEFAULTS.reopenDelaysMs;
    const delay = delays[Math.min(this.recogniserFailures, delays.length - 1)]!;
    this.recogniserFailures++;
    this.reopenTimer = this.o.timers.setTimeout(() => {
      this.reopenTimer = undefined;
      this.openRecogniser().then(
        (stream) => {
          if (this.stopped) void stream.close().catch(() => undefined);
          else this.stt = stream;
        },
        (error: unknown) => {
          this.o.log.warn({ err: error }, 'no recogniser could be opened; trying again');
          // The next recogniser, if there is one, is tried at once.
          if (this.o.engines.sttFailed?.('connect')) this.recogniserFailures = 0;
          this.scheduleReopen();
        },
      );
    }, delay);
  }

  /** One inbound frame, in arrival order. */
  audio(frame: Int16Array): void {
    if (this.stopped) return;
    if (this.inboundSamples === 0) this.audioOffset = this.o.clock.sinceStart() / 1000 - frame.length / this.o.rate;
    // Audio never runs ahead of the wall clock: a page that flushes what it captured before the call
    // started sends a burst, and counting it from the first frame would put every later speech end
    // that far in the future (voice-to-voice read short by the burst). Late audio is left late.
    const ahead =
      this.audioOffset + (this.inboundSamples + frame.length) / this.o.rate - this.o.clock.sinceStart() / 1000;
    if (ahead > 1e-6) this.audioOffset -= ahead;
    this.o.recording?.callerAudio(frame, this.audioNow() * 1000);
    this.o.events.heard(frame, this.audioNow());
    // The same number of samples back, a fixed ~20 ms behind: the VAD's clock reads that much late.
    if (this.denoiser) frame = this.denoiser.process(frame);
    this.inboundSamples += frame.length;
    if (this.backlog) {
      this.holdForVad(this.backlog, frame);
      return;
    }
    const endAt = this.audioNow();
    this.hear(frame, endAt);
    this.feed?.push(frame, endAt);
  }

  /** While the caller speaks, the recogniser hears every frame; between turns only the onset is kept. */
  private hear(frame: Int16Array, endAt: number): void {
    if (this.speech) this.pushStt(frame);
    else this.recent.push(frame, endAt);
  }

  /**
   * A copy (the transport may reuse its buffer), for the VAD to judge first; before the engines open, at most
   * heldWhileOpeningMs.
   */
  private holdForVad(backlog: HeldFrame[], frame: Int16Array): void {
    const held = { frame: frame.slice(), endAt: this.audioNow() };
    backlog.push(held);
    if (this.feed) {
      this.feed.push(held.frame, held.endAt);
      return;
    }
    this.backlogSamples += frame.length;
    const limit = (CALLER_DEFAULTS.heldWhileOpeningMs / 1000) * this.o.rate;
    while (this.backlogSamples > limit) this.backlogSamples -= backlog.shift()!.frame.length;
  }

  /**
   * The line was silent for a while (the caller was away on a transfer that failed): silence fills
   * the gap, so the caller's times, the recording and the VAD go on from the wall clock.
   */
  catchUp(): void {
    const frame = new Int16Array((this.o.rate * FRAME_MS) / 1000);
    const frameS = FRAME_MS / 1000;
    while (!this.stopped && this.inboundSamples > 0 && this.audioNow() + frameS <= this.o.clock.sinceStart() / 1000)
      this.audio(frame);
  }

  /**
   * The caller hung up: the turn they were still saying, or that was still being read, is read to its end and given as
   * a last userTurn (kept in the transcript, never answered). Resolves once it is, or after `deadlineMs`; at once when
   * there is none. Called before stop(), which then ends everything else.
   */
  lastWords(deadlineMs: number): Promise<void> {
    // The VAD may run behind the line (a loaded machine): the words just before the hang-up are judged first.
    if (!this.stopped && this.feed && !this.vadHasJudged(this.audioNow())) {
      const until = this.o.timers.now() + deadlineMs;
      return new Promise<void>((resolve) => {
        const timer = this.o.timers.setTimeout(resolve, deadlineMs);
        this.whenJudged = () => {
          this.o.timers.clearTimeout(timer);
          void this.lastWords(Math.max(0, until - this.o.timers.now())).then(resolve);
        };
      });
    }
    const speech = this.speech;
    const canRead = this.stt !== null || this.sttOpening !== null;
    if (!this.readingTurn && !this.stopped && speech?.confirmed && speech !== this.lostSpeech && canRead) {
      this.o.timers.clearTimeout(this.endpointTimer);
      this.endpointTimer = undefined;
      speech.endAt ??= this.audioNow();
      this.readTurn();
    }
    // A turn waiting for the first recogniser to open is read as soon as it has (open() awaited it first).
    const reading =
      this.readingTurn ??
      (this.readOnOpen && this.sttOpening
        ? this.sttOpening.then(
            () => this.readingTurn,
            () => undefined,
          )
        : null);
    if (!reading) return Promise.resolve();
    this.readAfterHangUp = true;
    return new Promise((resolve) => {
      const timer = this.o.timers.setTimeout(resolve, deadlineMs);
      void reading.finally(() => {
        this.o.timers.clearTimeout(timer);
        resolve();
      });
    });
  }

  /** The call is ending: nothing more is heard or decided. */
  stop(): void {
    this.stopped = true;
    this.modelEnded = null;
    this.whenJudged = null;
    this.backlog = null;
    this.feed?.stop();
    this.o.timers.clearTimeout(this.endpointTimer);
    this.o.timers.clearTimeout(this.bargeTimer);
    this.o.timers.clearTimeout(this.reopenTimer);
    this.clearFirstResultDeadline();
    this.endpointTimer = undefined;
    this.bargeTimer = undefined;
    this.reopenTimer = undefined;
  }

  /** Releases the engines. */
  close(): void {
    this.feed?.stop();
    if (this.stt) void this.stt.close().catch(() => undefined);
    this.vad?.close();
    this.denoiser?.close();
    this.stt = null;
    this.vad = null;
    this.denoiser = null;
  }

  /** Seconds of inbound audio, on the call's clock. */
  private audioNow(): number {
    return this.audioOffset + this.inboundSamples / this.o.rate;
  }

  private pushStt(frame: Int16Array): void {
    const samples = this.sttResampler ? this.sttResampler.push(frame) : frame;
    if (this.stt) {
      this.stt.push(samples);
      return;
    }
    if (!this.sttOpening) return;
    // Kept for the first recogniser, still opening; as the VAD's backlog, at most heldWhileOpeningMs.
    this.sttHeld.push(samples.slice());
    this.sttHeldSamples += samples.length;
    const limit = (CALLER_DEFAULTS.heldWhileOpeningMs / 1000) * this.o.sttRate;
    while (this.sttHeldSamples > limit) this.sttHeldSamples -= this.sttHeld.shift()!.length;
  }

  /** What the VAD found in one frame, then how far it has judged; a frame it judged from the backlog goes on now. */
  private onVadEvents(events: VadEvent[], endAt: number): void {
    for (const event of events) {
      if (this.stopped) return;
      // Frames sent before the call connected (a page's flush, a burst read after a stalled process connected the
      // call) sit before its start: speech in them starts with the call, never at a negative time in the transcript.
      const at = Math.max(0, this.audioOffset + this.vadStartSample / this.o.rate + event.at);
      if (event.type === 'speech_start') this.onSpeechStart(at);
      else this.onSpeechEnd(at);
    }
    if (this.stopped) return;
    this.judgedAt = endAt;
    this.o.events.judged(endAt);
    this.settleModelEnded();
    const whenJudged = this.whenJudged;
    if (whenJudged && this.vadHasJudged(this.audioNow())) {
      this.whenJudged = null;
      whenJudged();
    }
    const due = this.endDue;
    if (due && (this.endpointTimer !== due.token || this.vadHasJudged(due.dueAt))) {
      this.endDue = null;
      if (this.endpointTimer === due.token) this.turnEnded();
    }
    const backlog = this.backlog;
    if (!backlog) return;
    const judged = backlog.shift();
    if (judged) this.hear(judged.frame, judged.endAt);
    if (backlog.length === 0) this.backlog = null;
  }

  private onSpeechStart(at: number): void {
    this.o.timers.clearTimeout(this.endpointTimer);
    this.endpointTimer = undefined;
    this.o.events.speechStarted(at);
    const paused = this.speech;
    if (paused && paused.endAt !== null && !paused.confirmed && this.acknowledged(paused)) {
      // An acknowledgement over the agent paused, and the caller speaks again: it made no turn, and the new words are
      // speech of their own. Kept as one, a reading of the acknowledgement coming late (after the new words' pause)
      // would let both go, and the new words with it.
      this.letGo();
    }
    if (this.speech && this.speech.endAt !== null) {
      this.readOnOpen = false;
      // The caller went on after a pause shorter than the end of turn: the same turn continues.
      const pausedMs = (at - this.speech.endAt) * 1000;
      if (this.speech.confirmed && this.speech.inDoubt) this.pace.paused(pausedMs);
      // After digits, in doubt or waited on as half a number: a pause between groups either way.
      const words = this.speech.pauseWords ?? this.speech.lastReading?.text;
      if (this.speech.confirmed && words && endsInDigit(words)) this.numberPace.paused(pausedMs);
      this.speech.resumedWords = words ?? null;
      this.speech.endAt = null;
      this.speech.pauseWords = null;
      this.speech.wordsPending = false;
      this.speech.recogniserEnded = null;
      this.armFirstResultDeadline(this.speech);
      if (this.o.agentBusy()) this.goOnOverAgent(this.speech, at);
      // Speech over the agent still being read when the agent finished: the caller going on to an agent that is quiet
      // is taking the turn, as new speech would (kept undecided, it would be let go at its pause as a sound).
      else this.speech.confirmed = true;
      return;
    }
    this.speech = {
      startAt: at,
      endAt: null,
      confirmed: false,
      pauseWords: null,
      resumedWords: null,
      wordsPending: false,
      acknowledging: false,
      readAsked: false,
      shortRead: false,
      recogniserEnded: null,
      lastReading: null,
      endedByModel: false,
      recogniserDecides: false,
      resultHeard: false,
      inDoubt: false,
      goingOn: false,
    };
    this.armFirstResultDeadline(this.speech);
    // VAD may report the start late (it runs behind the audio): hand over from just before it.
    this.recent.drain(at - CALLER_DEFAULTS.prerollMs / 1000, (frame) => this.pushStt(frame));
    if (!this.o.agentBusy()) {
      this.speech.confirmed = true;
      return;
    }
    // Talking over the agent: only speech longer than the threshold interrupts it.
    if (this.thresholdMs() === null) return;
    this.speech.goingOn =
      this.answering !== null && (at - this.answering.takenAt) * 1000 <= CALLER_DEFAULTS.goingOnWithinMs;
    this.armBargeTimer(at, this.thresholdOf(this.speech), () => {
      if (this.speech && !this.stopped) this.thresholdReached(this.speech);
    });
  }

  /** Calls `reached` once the speech begun at `at` has lasted `thresholdMs` of audio (some may be heard already). */
  private armBargeTimer(at: number, thresholdMs: number, reached: () => void): void {
    const heardMs = (this.audioNow() - at) * 1000;
    this.o.timers.clearTimeout(this.bargeTimer);
    this.bargeTimer = this.o.timers.setTimeout(
      () => {
        this.bargeTimer = undefined;
        reached();
      },
      Math.max(0, thresholdMs - heardMs),
    );
  }

  /**
   * The caller goes on from `at` with speech the agent is talking over. A turn the agent took the floor in the pause
   * of (a greeting said at a callee's first pause): that stops it once it lasts the interruption threshold, as new
   * speech over the agent does; shorter ("uh-huh" to the greeting) lets it go on. Speech over the agent that has not
   * stopped it (a short word, an acknowledgement) is judged at the threshold as new speech is, its reading included.
   */
  private goOnOverAgent(speech: Speech, at: number): void {
    const threshold = this.thresholdMs();
    if (threshold === null) return;
    if (!speech.confirmed) {
      speech.shortRead = false;
      this.armBargeTimer(at, this.thresholdOf(speech), () => {
        if (this.speech === speech && !this.stopped) this.thresholdReached(speech);
      });
      return;
    }
    this.armBargeTimer(at, threshold, () => {
      if (this.speech === speech && speech.endAt === null && !this.stopped) this.cut(speech);
    });
  }

  /**
   * Speech over the agent lasted the threshold: it stops the agent, unless what the recogniser has read of it so far is
   * only acknowledgements. With no reading yet, one is asked for and waited for a moment (ackReadWaitMs).
   */
  private thresholdReached(speech: Speech): void {
    if (!this.o.agentBusy()) {
      speech.confirmed = true;
      return;
    }
    const words = speech.lastReading?.text.trim() ?? null;
    if (words && this.o.isAcknowledgement(words)) {
      speech.acknowledging = true;
      return;
    }
    if (words === null && !speech.goingOn && !speech.readAsked && this.stt?.readNow) {
      speech.readAsked = true;
      this.bargeTimer = this.o.timers.setTimeout(() => {
        this.bargeTimer = undefined;
        if (this.speech === speech && !this.stopped && !speech.confirmed && !speech.acknowledging) this.cut(speech);
      }, CALLER_DEFAULTS.ackReadWaitMs);
      // It may come at once (a reading already made): onPartial then decides.
      this.stt.readNow();
      return;
    }
    this.cut(speech);
  }

  /** How long speech over the agent must last to stop it by itself; null when the model's word decides. */
  private thresholdMs(): number | null {
    return this.o.modelReportsSpeech?.() ? null : this.o.interruptionThresholdMs;
  }

  /** How long this speech over the agent must last to stop it (Infinity: it never does). */
  private thresholdOf(speech: Speech): number {
    const threshold = this.thresholdMs() ?? Infinity;
    return speech.goingOn ? Math.min(threshold, CALLER_DEFAULTS.goingOnMs) : threshold;
  }

  /** Whether the latest reading of speech over the agent is only acknowledgements. */
  private acknowledged(speech: Speech): boolean {
    const words = speech.lastReading?.text.trim() ?? '';
    return speech.acknowledging && words !== '' && this.o.isAcknowledgement(words);
  }

  /** The caller's speech stops the agent: it is a turn from here on. */
  private cut(speech: Speech): void {
    speech.confirmed = true;
    speech.acknowledging = false;
    if (!this.o.agentBusy()) return;
    // Talked over the answer to their last turn soon after it: that turn was not over, and its pause was theirs.
    const answering = this.answering;
    const sinceTurn = answering === null ? null : (speech.startAt - answering.endAt) * 1000;
    if (sinceTurn !== null && sinceTurn <= CALLER_PACE.cutInWithinMs) {
      this.pace.paused(sinceTurn);
      if (answering?.inDigits) this.numberPace.paused(sinceTurn);
    }
    this.answering = null;
    this.o.log.debug(
      { after_ms: Math.round((this.audioNow() - speech.startAt) * 1000), going_on: speech.goingOn },
      'speech over the agent stops it',
    );
    this.o.events.interruption();
  }

  /** No reading of speech over the agent came in time: acknowledgements so far are let go, anything else is a turn. */
  private settleUnread(speech: Speech): void {
    this.endpointTimer = undefined;
    if (this.speech !== speech || this.stopped) return;
    const words = speech.lastReading?.text.trim() ?? '';
    if (words && this.o.isAcknowledgement(words)) {
      this.letGo();
      return;
    }
    this.cut(speech);
    speech.wordsPending = false;
    this.decideEndOfTurn(speech);
  }

  /** Speech under the agent that was no turn (a short sound, an acknowledgement): forgotten, the agent goes on. */
  private letGo(): void {
    const speech = this.speech;
    // Why the agent went on over the caller: for a call whose barge-in is in question.
    if (speech)
      this.o.log.debug(
        {
          speech_ms: Math.round(((speech.endAt ?? this.audioNow()) - speech.startAt) * 1000),
          going_on: speech.goingOn,
          words: speech.lastReading?.text ?? null,
        },
        'speech over the agent let go',
      );
    this.o.timers.clearTimeout(this.bargeTimer);
    this.o.timers.clearTimeout(this.endpointTimer);
    this.bargeTimer = undefined;
    this.endpointTimer = undefined;
    this.stt?.cancel();
    this.dropHeldForStt();
    this.speech = null;
    this.o.events.noTurn();
  }

  private onSpeechEnd(at: number): void {
    const speech = this.speech;
    if (!speech) return;
    // From the pause on, the turn's final text has its own deadline.
    this.clearFirstResultDeadline();
    this.o.events.speechEnded(at);
    if (
      !speech.confirmed &&
      this.bargeTimer !== undefined &&
      !speech.readAsked &&
      (at - speech.startAt) * 1000 >= this.thresholdOf(speech)
    ) {
      // The speech lasted the threshold on the audio's clock, but its timer runs on the wall's: frames that came
      // together (a stream stalled, then catching up) bring the pause before the timer fires. It is judged as at the
      // threshold (an acknowledgement still lets the agent go on), not let go as a short sound.
      this.o.timers.clearTimeout(this.bargeTimer);
      this.bargeTimer = undefined;
      this.thresholdReached(speech);
    }
    if (!speech.confirmed && (speech.acknowledging || speech.readAsked) && this.stt?.readNow) {
      // Over the agent, past the threshold, and not (yet) read as more than acknowledgements: the reading of all of it
      // says whether it was a turn (onPartial).
      speech.acknowledging = true;
      this.readPausedOverAgent(speech, at, CALLER_DEFAULTS.ackSettleMs, () => this.settleUnread(speech));
      return;
    }
    if (!speech.confirmed && this.bargeTimer !== undefined && this.stt?.readNow) {
      // Over the agent and shorter than the threshold: a sound, an acknowledgement, or a word that means it ("Stop.",
      // "No."), lost as a sound before. Its reading tells them apart (acknowledgementDecided); unread in time, it was
      // a sound.
      speech.shortRead = true;
      this.readPausedOverAgent(speech, at, CALLER_DEFAULTS.shortReadWaitMs, () => {
        this.endpointTimer = undefined;
        if (this.speech === speech && !this.stopped) this.letGo();
      });
      return;
    }
    if (!speech.confirmed) {
      // A backchannel or a noise under the agent: not a turn, not an interruption.
      this.letGo();
      return;
    }
    speech.endAt = at;
    if (speech.endedByModel) {
      this.readTurn();
      return;
    }
    // The recogniser reads the turn so far now rather than at its own, later, sense of a pause
    // (or gives the reading it has): the words come back into decideEndOfTurn through onPartial,
    // and the end of turn waits for them.
    speech.wordsPending = this.stt?.readNow !== undefined;
    this.decideEndOfTurn(speech);
    this.stt?.readNow?.();
  }

  /**
   * Speech over the agent paused at `at` undecided: the reading of all of it is asked for (onPartial decides on it),
   * and `unread` runs if none has come within `waitMs`.
   */
  private readPausedOverAgent(speech: Speech, at: number, waitMs: number, unread: () => void): void {
    this.o.timers.clearTimeout(this.bargeTimer);
    this.bargeTimer = undefined;
    speech.endAt = at;
    speech.wordsPending = true;
    this.o.timers.clearTimeout(this.endpointTimer);
    this.endpointTimer = this.o.timers.setTimeout(unread, waitMs);
    this.stt?.readNow?.();
  }

  /**
   * The model's own turn detection heard the caller speak: the speech under way is a turn (or an interruption the
   * model already acted on), not a backchannel to dismiss.
   */
  confirmSpeech(): void {
    const speech = this.speech;
    if (!speech || speech.confirmed || this.stopped) return;
    this.o.timers.clearTimeout(this.bargeTimer);
    this.bargeTimer = undefined;
    speech.confirmed = true;
    speech.acknowledging = false;
  }

  /**
   * The model's own turn detection ended the caller's turn (it started answering): the turn under way ends now, or
   * at the VAD's pause if the VAD still hears speech, and its words are read as usual. `noTurn` runs when no turn is
   * under way nor being read (the VAD heard nothing the model did): at once, or, with the VAD behind the line (the
   * audio held while the engines opened, a loaded machine), once it has judged the audio the model had heard. Decided
   * at once, the caller's first words, heard by the model seconds before the VAD caught up with them, were taken for
   * speech over the model's answer and let go.
   */
  endTurnNow(noTurn: () => void): void {
    const speech = this.speech;
    if (this.stopped) return noTurn();
    if (!speech) {
      if (this.reading) return;
      const at = this.audioNow();
      if (this.vadHasJudged(at)) return noTurn();
      this.modelEnded = { at, noTurn };
      return;
    }
    this.confirmSpeech();
    if (speech.endAt === null) {
      speech.endedByModel = true;
      return;
    }
    this.o.timers.clearTimeout(this.endpointTimer);
    this.endpointTimer = undefined;
    this.readTurn();
  }

  /**
   * The VAD, behind the line when the model ended a turn, has caught up: speech it found begun by then is that turn;
   * none (and no turn being read) is the model answering nothing the caller said.
   */
  private settleModelEnded(): void {
    const ended = this.modelEnded;
    if (!ended) return;
    const heard = this.speech !== null && this.speech.startAt <= ended.at;
    if (!heard && !this.vadHasJudged(ended.at)) return;
    this.modelEnded = null;
    if (heard) this.endTurnNow(ended.noTurn);
    else if (!this.reading) ended.noTurn();
  }

  /** Asks the end-of-turn policy how much longer to wait, at the pause and again when its words arrive. */
  private decideEndOfTurn(speech: Speech): void {
    if (speech.endAt === null) return;
    this.o.timers.clearTimeout(this.endpointTimer);
    this.endpointTimer = undefined;
    const silentMs = (this.audioNow() - speech.endAt) * 1000;
    const asked = this.o.lastAgentWords?.() ?? null;
    const pause = {
      silentMs,
      words: speech.pauseWords,
      wordsPending: speech.wordsPending,
      recogniserEnded: speech.recogniserEnded,
      earlierWords: speech.resumedWords,
      asked,
      paceMs: this.pace.waitMs(),
      numberPaceMs: this.numberPace.waitMs(),
      pickedUp: this.o.outbound === true && asked === null,
    };
    const wait = this.o.endOfTurn.waitMs(pause);
    speech.inDoubt = this.o.endOfTurn.inDoubt?.(pause) ?? false;
    speech.recogniserDecides = recogniserDecides(this.o.endOfTurn, pause);
    this.o.log.debug(
      {
        silent_ms: Math.round(silentMs),
        words: speech.pauseWords,
        words_pending: speech.wordsPending,
        recogniser_ended: speech.recogniserEnded !== null,
        pace_ms: pause.paceMs,
        number_pace_ms: pause.numberPaceMs,
        wait_ms: Math.round(wait),
        vad_behind_ms: Math.round((this.audioNow() - this.judgedAt) * 1000),
      },
      'end of turn: waiting',
    );
    // Where on the caller's audio the turn ends: the silence counts only once the VAD has judged it.
    const dueAt = this.audioNow() + wait / 1000;
    if (wait >= 1) {
      this.endpointTimer = this.o.timers.setTimeout(() => this.endOnJudgedSilence(dueAt), wait);
      return;
    }
    // The VAD's own silence already covered the wait (Silero's 550 ms > the default 500): answer
    // now, not a timer tick later. A speech start in the same VAD batch still cancels it.
    const token: TimerHandle = { id: -1 };
    this.endpointTimer = token;
    queueMicrotask(() => {
      if (this.endpointTimer === token) this.endOnJudgedSilence(dueAt);
    });
  }

  /**
   * The turn's wait is over at `dueAt` on the caller's audio. With the VAD behind the line (the audio held while the
   * engines opened, a loaded machine), the audio up to there is judged first: the silence the wait counted may hold
   * the caller going on (a menu's "press one. For billing…" read out as it came, seconds late), which is the same
   * turn, not a new one.
   */
  private endOnJudgedSilence(dueAt: number): void {
    if (this.vadHasJudged(dueAt)) {
      this.turnEnded();
      return;
    }
    const token: TimerHandle = { id: -1 };
    this.endpointTimer = token;
    this.endDue = { token, dueAt };
  }

  /**
   * Whether the VAD has judged the caller's audio up to `at`, or all of it that has come (a line that stopped sending
   * has nothing more to judge). It runs a frame or so behind the line: that much is not waited for.
   */
  private vadHasJudged(at: number): boolean {
    return this.judgedAt + VAD_FOLLOWS_S >= Math.min(at, this.audioNow());
  }

  private turnEnded(): void {
    this.endpointTimer = undefined;
    this.endDue = null;
    this.readTurn();
  }

  /** Ends the turn under way and reads it, keeping the reading where a hang-up can wait for it. */
  private readTurn(): void {
    if (!this.stt && this.sttOpening) {
      // Read once the recogniser has opened (open()); speech before then goes on with this turn.
      this.readOnOpen = true;
      return;
    }
    const reading = this.endTurn().finally(() => {
      if (this.readingTurn === reading) this.readingTurn = null;
    });
    this.readingTurn = reading;
  }

  private onPartial(result: SttResult): void {
    const speech = this.speech;
    if (!speech) return;
    speech.lastReading = result;
    if (!speech.confirmed && !this.acknowledgementDecided(speech, result.text)) return;
    // New words after the recogniser's verdict: the caller went on, the verdict no longer holds.
    if (speech.recogniserEnded && saysMore(speech.recogniserEnded.reading, result)) speech.recogniserEnded = null;
    if (result.text) this.o.events.partial(result.text);
    // A reading that came after the pause began covers all the caller said: the policy may now
    // decide on the words (none, too: then the words do not tell).
    if (speech.endAt !== null && this.endpointTimer !== undefined) {
      speech.pauseWords = result.text;
      speech.wordsPending = false;
      this.decideEndOfTurn(speech);
    }
  }

  /**
   * A reading of speech over the agent that has not stopped it: an acknowledgement keeps the agent talking (and, at its
   * pause, is let go); other words stop it now. Returns whether the speech is a turn now.
   */
  private acknowledgementDecided(speech: Speech, text: string): boolean {
    const acknowledges = text.trim() !== '' && this.o.isAcknowledgement(text);
    if (speech.acknowledging) {
      if (acknowledges) {
        if (speech.endAt !== null) this.letGo();
        return false;
      }
      this.cut(speech);
      return true;
    }
    if (speech.shortRead) {
      // No words ("", "."): a sound. A streaming provider's reading may lag the audio; a word it has not read yet is
      // lost as it was before short words were read at all.
      if (spoken(text) === '' || acknowledges) {
        this.letGo();
        return false;
      }
      speech.shortRead = false;
      this.cut(speech);
      return true;
    }
    if (speech.readAsked && this.bargeTimer !== undefined) {
      // The reading asked for at the threshold.
      this.o.timers.clearTimeout(this.bargeTimer);
      this.bargeTimer = undefined;
      this.thresholdReached(speech);
      return speech.confirmed;
    }
    return false;
  }

  /**
   * A streaming recogniser that hears the caller speak for its firstResultWithinMs without giving any result is failed
   * as one late with the turn's final text is (finalizeInTime): only while another is left to move to.
   */
  private armFirstResultDeadline(speech: Speech): void {
    this.clearFirstResultDeadline();
    const stt = this.stt;
    const ms = stt?.firstResultWithinMs;
    if (!stt || ms === undefined || speech.resultHeard) return;
    if ((this.o.engines.sttFinalDeadlineMs?.() ?? null) === null) return;
    this.firstResultDeadline = providerDeadline(this.o.timers, ms, () => {
      this.firstResultDeadline = null;
      if (stt === this.stt && !this.stopped) this.recogniserFailed(new FirstResultLate(ms), 'timeout');
    });
  }

  private clearFirstResultDeadline(): void {
    this.firstResultDeadline?.clear();
    this.firstResultDeadline = null;
  }

  /** The recogniser gave a result: it is reading what the caller says. */
  private heardResult(): void {
    this.clearFirstResultDeadline();
    if (this.speech) this.speech.resultHeard = true;
  }

  /** The turn's final text, or FinalTextLate past the recogniser's deadline (when another is left to move to). */
  private finalizeInTime(stt: SttStream): Promise<SttResult> {
    const deadlineMs = this.o.engines.sttFinalDeadlineMs?.() ?? null;
    const final = stt.finalize();
    if (deadlineMs === null) return final;
    return new Promise((resolve, reject) => {
      const timer = providerDeadline(this.o.timers, deadlineMs, () => {
        stt.cancel();
        reject(new FinalTextLate(deadlineMs));
      });
      final.then(
        (result) => {
          timer.clear();
          resolve(result);
        },
        (error: unknown) => {
          timer.clear();
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  /**
   * The recogniser judged the turn over: one more input to the end-of-turn policy, asked again if
   * the caller has paused (the VAD's pause is still what starts an end of turn).
   */
  private onRecogniserEnded(signal: SttTurnEnd): void {
    const speech = this.speech;
    if (!speech?.confirmed) return;
    speech.recogniserEnded = { confidence: signal.confidence, reading: speech.lastReading ?? { text: '' } };
    if (speech.endAt !== null && this.endpointTimer !== undefined) this.decideEndOfTurn(speech);
  }

  private async endTurn(): Promise<void> {
    const speech = this.speech;
    const stt = this.stt;
    if (!speech || speech.endAt === null || this.stopped) return;
    this.speech = null;
    if (speech === this.lostSpeech || !stt) {
      // The recogniser failed while hearing this turn (the caller was already asked again), or
      // none is open yet: what a new one heard of its end is not a turn.
      const alreadyAsked = speech === this.lostSpeech;
      this.lostSpeech = null;
      stt?.cancel();
      if (!alreadyAsked) this.o.events.unheard();
      return;
    }
    this.o.log.debug({ recogniser_decided: speech.recogniserDecides }, 'end of turn');
    const decidedAt = this.o.timers.now();
    const speechEndWall = this.o.clock.startWall + speech.endAt * 1000;
    let result: SttResult;
    this.reading = true;
    try {
      result = await this.finalizeInTime(stt);
    } catch (error) {
      // Its error event may have come first and opened another already.
      if (!this.stopped && stt === this.stt) this.recogniserFailed(error, sttFailureReason(error));
      // The words it gave while the caller spoke are the turn (a streaming provider's interim reading): asking
      // again what was already heard makes the caller repeat it. A turn with none is asked again.
      const heard = speech.lastReading?.text.trim() ?? '';
      if (!heard) {
        this.reading = false;
        if (!this.stopped) this.o.events.unheard();
        return;
      }
      this.o.log.info('the turn is the words the failed recogniser gave while the caller spoke');
      result = { text: heard };
    }
    this.reading = false;
    if (this.stopped) {
      // The caller hung up while it was read: their last words still go into the transcript.
      const text = result.text.trim();
      if (this.readAfterHangUp && text)
        this.o.events.userTurn({ text, startAt: speech.startAt, endAt: speech.endAt, speechEndWall });
      return;
    }
    this.recogniserFailures = 0;
    this.o.events.recognised(this.o.timers.now() - decidedAt);
    const text = result.text.trim();
    if (!text) {
      // Noise the recogniser heard no words in: no turn.
      this.o.events.noTurn();
      return;
    }
    this.answering = { endAt: speech.endAt, takenAt: this.audioNow(), inDigits: endsInDigit(text) };
    this.o.events.userTurn({ text, startAt: speech.startAt, endAt: speech.endAt, speechEndWall });
  }
}

/** Letters and digits only, lower case: a reading as said, not as written ("" where nothing was said). */
export const spoken = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();

/**
 * Whether `later` holds words the caller said after `earlier`. Not a recogniser writing the same words again
 * (AssemblyAI's formatted copy of an ended turn: punctuation, casing, "nine four one oh seven" as "94107"): with word
 * times, only a word ending later is more; without, only other words as said.
 */
function saysMore(earlier: SttResult, later: SttResult): boolean {
  const endOf = (r: SttResult) => r.words?.at(-1)?.end;
  const [before, after] = [endOf(earlier), endOf(later)];
  if (before !== undefined && after !== undefined) return after > before + 1e-3;
  return spoken(earlier.text) !== spoken(later.text);
}

/** The recogniser gave no final text by its deadline. */
class FinalTextLate extends Error {
  constructor(ms: number) {
    super(`the recogniser gave no final text within ${ms} ms`);
    this.name = 'FinalTextLate';
  }
}

/** A streaming recogniser heard the caller speak past its first-result deadline and gave nothing. */
class FirstResultLate extends Error {
  constructor(ms: number) {
    super(`the recogniser gave no result within ${ms} ms of the caller speaking`);
    this.name = 'FirstResultLate';
  }
}

/** A recogniser's failure as the fallbacks count it: late, unreachable (its request never got an answer), or other. */
function sttFailureReason(error: unknown): FallbackReason {
  if (error instanceof FinalTextLate) return 'timeout';
  return (error as { code?: unknown } | null)?.code === 'STT_HTTP_FAILED' ? 'connect' : 'error';
}
