// The voicemail drop of an outbound call: once the answering-machine detector says a machine
// answered, the agent stops talking and the flow has the line; the message is left once the beep
// has gone (or the greeting has ended, or waiting took too long), and the call ends
// voicemail_reached. Without a message, a machine ends the call at once.
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

  constructor(private readonly o: VoicemailDropOptions) {
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
          },
          beep() {
            drop.leave();
          },
        })
      : null;
  }

  get holdsLine(): boolean {
    return this.wait !== null;
  }

  audio(frame: Int16Array, atMs: number): void {
    if (this.detector?.listening) this.detector.audio(frame, atMs);
  }

  judged(atMs: number): void {
    this.detector?.judged(atMs);
  }

  speechStarted(atMs: number): void {
    this.detector?.speechStarted(atMs);
    if (this.wait) this.o.timers.clearTimeout(this.wait.timer);
  }

  speechEnded(atMs: number): void {
    this.detector?.speechEnded(atMs);
    if (this.wait) this.awaitGreetingEnd();
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

  /** A machine answered: hang up, or stop talking and wait for the beep to leave the message. */
  private found(evidence: MachineEvidence): void {
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
