// The voicemail drop of an outbound call: once the answering-machine detector says a machine
// answered, the agent stops talking and the flow has the line; the message is left once the beep
// has gone (or the greeting has ended, or waiting took too long), and the call ends
// voicemail_reached. Without a message, a machine ends the call at once.
// The agent's greeting waits for the callee, not for the detector: it is said as soon as the
// callee's first words pause (a person's "Hello?"), or after a quiet answer, while the detector
// goes on listening; a machine known later cuts it at once, as one known earlier does.
import type { Logger } from 'pino';
import type { VoicemailHandling } from '../../agents/schema.ts';
import type { TimerHandle, Timers } from '../../timers.ts';
import type { FlowHost, LineFlow } from '../flow.ts';
import { AnsweringMachineDetector, type MachineEvidence } from './answering-machine.ts';

export const VOICEMAIL_DROP_DEFAULTS = {
  /** A machine's greeting is over once it has been quiet this long (no beep came). */
  greetingEndMs: 1_500,
  /** Longest wait, once a machine was found, for its beep or the end of its greeting. */
  beepWaitMs: 10_000,
  /** A callee who says nothing this long after answering is greeted anyway. */
  quietAnswerMs: 2_000,
} as const;

const EVIDENCE_WORDS: Record<MachineEvidence, string> = {
  beep: 'beep',
  words: 'greeting words',
  long_greeting: 'long greeting',
  carrier: "carrier's detection",
};

export interface VoicemailDropOptions {
  /** The line's rate (the detector hears its beeps). */
  rate: number;
  /** What to do on a machine; null when this call does not look for one (the carrier's detection still ends it). */
  handling: VoicemailHandling | null;
  timers: Timers;
  host: FlowHost;
  /** The caller's side is speaking now (a greeting still under way). */
  callerSpeaking(): boolean;
  /** The agent's begin message: with detection on, held until the callee is heard. Empty: none. */
  greeting?: string | undefined;
  log: Logger;
}

export class VoicemailDrop implements LineFlow {
  private readonly detector: AnsweringMachineDetector | null;
  /** A machine answered: the message waits for its beep or the end of its greeting. */
  private wait: {
    evidence: MachineEvidence;
    message: string;
    timer: TimerHandle | undefined;
    deadline: TimerHandle;
  } | null = null;
  /** The begin message still to say once the callee is heard; null once said, given up, or not held. */
  private greeting: string | null;
  /** The callee's first stretch of speech (ms on the call's audio clock, as the VAD heard it). */
  private calleeSpeech: { fromMs: number; toMs: number | null } | null = null;
  /**
   * How far the VAD has judged the callee's audio (ms on the call's audio clock): a speech event it reports is no later
   * than the frame after this.
   */
  private judgedMs = 0;
  /** ms of the callee's audio heard so far, and where its first frame sits on the call's clock. */
  private heardAudioMs = 0;
  private audioOffsetMs = 0;

  constructor(private readonly o: VoicemailDropOptions) {
    this.greeting = o.handling && o.greeting ? o.greeting : null;
    const drop = this;
    // Method shorthand, not arrows: see the note on handlers in session.ts.
    this.detector = o.handling
      ? new AnsweringMachineDetector(o.rate, o.handling.detectTimeoutMs, {
          decided(answerer) {
            o.log.info(
              {
                answered_by: answerer.by,
                evidence: answerer.by === 'machine' ? answerer.evidence : undefined,
                at_ms: Math.round(answerer.atMs),
              },
              'answering machine detection',
            );
            if (answerer.by === 'machine') drop.found(answerer.evidence);
            else drop.greet('detector', answerer.atMs);
          },
          beep(endMs) {
            // And where in the callee's audio: the call's clock places that audio by when it came, which a busy
            // service or a slow start moves by hundreds of ms; the machine's own timeline does not move.
            o.log.info(
              { end_ms: Math.round(endMs), in_audio_ms: Math.round(endMs - drop.audioOffsetMs) },
              'answering machine beep',
            );
            drop.leave();
          },
        })
      : null;
  }

  get holdsLine(): boolean {
    return this.wait !== null;
  }

  /** The begin message waits for the callee (the session does not say it at the start). */
  get holdsGreeting(): boolean {
    return this.greeting !== null;
  }

  audio(frame: Int16Array, atMs: number): void {
    this.audioOffsetMs = atMs - this.heardAudioMs;
    this.heardAudioMs += (frame.length / this.o.rate) * 1000;
    if (this.detector?.listening) this.detector.audio(frame, atMs);
  }

  /** The VAD has judged the callee's audio up to `atMs`: a quiet answer is timed on its clock, not the line's. */
  judged(atMs: number): void {
    this.judgedMs = atMs;
    this.detector?.judged(atMs);
    if (this.greeting !== null && !this.calleeSpeech && atMs >= VOICEMAIL_DROP_DEFAULTS.quietAnswerMs) {
      this.greet('quiet', atMs);
    }
  }

  speechStarted(atMs: number): void {
    this.calleeSpeech ??= { fromMs: atMs, toMs: null };
    this.detector?.speechStarted(atMs);
    if (this.wait) this.o.timers.clearTimeout(this.wait.timer);
  }

  speechEnded(atMs: number): void {
    this.detector?.speechEnded(atMs);
    if (this.calleeSpeech && this.calleeSpeech.toMs === null) this.calleeSpeech.toMs = atMs;
    if (this.wait) this.awaitGreetingEnd();
    // The callee's first words paused ("Hello?"): greeted now, while the detector goes on listening.
    else this.greet('pause', this.judgedMs);
  }

  words(text: string, atMs: number): void {
    this.detector?.words(text, atMs);
  }

  /** The carrier's own answering-machine detection found a machine (Twilio AMD) at `atMs`. */
  carrierFound(atMs: number): void {
    if (this.detector) this.detector.carrier('machine', atMs);
    else this.found('carrier');
  }

  stop(): void {
    this.detector?.stop();
    if (!this.wait) return;
    this.o.timers.clearTimeout(this.wait.timer);
    this.o.timers.clearTimeout(this.wait.deadline);
  }

  /**
   * The held begin message, said once: at the pause after the callee's first words (it answers them), after a quiet
   * answer, or once the detector heard a person; `atMs`: the caller's audio heard by then, on the call's audio clock.
   */
  private greet(after: 'pause' | 'quiet' | 'detector', atMs: number): void {
    const text = this.greeting;
    this.greeting = null;
    if (!text || !this.o.host.live) return;
    this.o.log.info(
      {
        after,
        at_ms: Math.round(atMs),
        callee_from_ms: this.calleeSpeech && Math.round(this.calleeSpeech.fromMs),
        callee_to_ms: this.calleeSpeech?.toMs == null ? null : Math.round(this.calleeSpeech.toMs),
      },
      'greeting the callee',
    );
    this.o.host.act({ kind: 'greet', text, answering: after === 'pause' });
  }

  /** A machine answered: hang up, or stop talking and wait for the beep to leave the message. */
  private found(evidence: MachineEvidence): void {
    // A machine is not greeted; a greeting already under way is cut (take_turn).
    this.greeting = null;
    if (!this.o.host.live) return;
    const message = this.o.handling?.message;
    if (!message) {
      this.o.host.act({
        kind: 'end',
        reason: 'voicemail_reached',
        message: `An answering machine answered (found by its ${EVIDENCE_WORDS[evidence]}); no message was left.`,
      });
      return;
    }
    this.o.host.act({ kind: 'take_turn', cut: true });
    const deadline = this.o.timers.setTimeout(() => this.leave(), VOICEMAIL_DROP_DEFAULTS.beepWaitMs);
    this.wait = { evidence, message, timer: undefined, deadline };
    // Found by its beep: the greeting is over. Otherwise a beep, or the greeting's end, starts the message.
    if (evidence === 'beep') this.leave();
    else if (!this.o.callerSpeaking()) this.awaitGreetingEnd();
  }

  private awaitGreetingEnd(): void {
    const wait = this.wait;
    if (!wait) return;
    this.o.timers.clearTimeout(wait.timer);
    wait.timer = this.o.timers.setTimeout(() => this.leave(), VOICEMAIL_DROP_DEFAULTS.greetingEndMs);
  }

  private leave(): void {
    const wait = this.wait;
    if (!wait || !this.o.host.live) return;
    this.o.host.act({
      kind: 'end',
      reason: 'voicemail_reached',
      say: wait.message,
      message: `An answering machine answered (found by its ${EVIDENCE_WORDS[wait.evidence]}); the voicemail message was left.`,
    });
  }
}
