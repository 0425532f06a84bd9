// Who answered an outbound call, decided from the audio alone so it works on every line: a machine
// gives itself away by a long uninterrupted greeting, by its words ("leave a message", "after the
// tone", "is not available", "mailbox"), or by its beep; a person says something short and waits.
// A carrier's own detection (Twilio AMD), when there is one, is one more input. It only listens: a
// person is never kept waiting for the decision.
import { BeepDetector } from '../../audio/beep.ts';
import { plainText } from './plain-text.ts';

export const MACHINE_DETECTION = {
  /** Speech this long without a pause for an answer is a recorded greeting. */
  longGreetingMs: 3_500,
  /** Pauses shorter than this are inside one greeting. */
  greetingGapMs: 800,
  /** A short first stretch of speech followed by this much silence is a person waiting for an answer. */
  humanSilenceMs: 1_500,
} as const;

/** Phrases of recorded greetings; matched on the recogniser's words, lower-cased, punctuation dropped. */
const MACHINE_PHRASES = [
  /\bleave (a|your|me a|us a) (brief |short |detailed )?(message|name|voicemail)/,
  /\b(after|at) the (tone|beep)\b/,
  /\b(is|are|am) (not|currently not|un) ?available\b/,
  /\bunavailable\b/,
  /\bmail ?box\b/,
  /\bvoice ?mail\b/,
  /\b(can't|cannot|can not|unable to) (take|come to|answer|get to) (your|the) (call|phone)\b/,
  /\brecord your message\b/,
  /\bget back to you\b/,
  /\b(i|we) missed your call\b/,
  /\bnot able to (take|answer)\b/,
];

export function soundsLikeMachine(words: string): boolean {
  const text = plainText(words);
  return MACHINE_PHRASES.some((p) => p.test(text));
}

export type MachineEvidence = 'beep' | 'words' | 'long_greeting' | 'carrier';

export type Answerer = { by: 'machine'; evidence: MachineEvidence; atMs: number } | { by: 'human'; atMs: number };

export interface MachineDetectorEvents {
  decided(answerer: Answerer): void;
  /** After a machine was decided: its beep ended (time to speak), or the greeting did. */
  beep(endMs: number): void;
}

/**
 * Fed the caller's audio frames, speech stretches (VAD) and words (recogniser), all on the call's
 * clock in ms; decides once, then (for a machine) keeps hearing for the beep.
 */
export class AnsweringMachineDetector {
  private readonly beeps: BeepDetector;
  private decision: Answerer | null = null;
  /** The stretch of speech under way or last ended: its start, and its end once it paused. */
  private stretch: { startMs: number; endMs: number | null } | null = null;
  private stopped = false;

  constructor(
    rate: number,
    private readonly timeoutMs: number,
    private readonly events: MachineDetectorEvents,
  ) {
    this.beeps = new BeepDetector(rate);
  }

  get decided(): Answerer | null {
    return this.decision;
  }

  /** Whether it still wants frames: deciding, or a machine's beep still to come. */
  get listening(): boolean {
    return !this.stopped && (this.decision === null || this.decision.by === 'machine');
  }

  /** One 20 ms caller frame that began at `atMs`, as it arrives: its beep is heard at once, whatever the VAD's lag. */
  audio(frame: Int16Array, atMs: number): void {
    if (!this.listening) return;
    const beep = this.beeps.push(frame, atMs);
    if (!beep) return;
    if (!this.decision) this.decide({ by: 'machine', evidence: 'beep', atMs: beep.endMs });
    this.events.beep(beep.endMs);
  }

  /**
   * The VAD has judged the audio up to `atMs` (its speechStarted/speechEnded before it are in): a greeting's length
   * and a person's silence are measured to here, on the VAD's own clock.
   */
  judged(atMs: number): void {
    if (this.decision || this.stopped) return;
    const stretch = this.stretch;
    if (stretch && stretch.endMs === null && atMs - stretch.startMs >= MACHINE_DETECTION.longGreetingMs) {
      this.decide({ by: 'machine', evidence: 'long_greeting', atMs });
    } else if (stretch && stretch.endMs !== null && atMs - stretch.endMs >= MACHINE_DETECTION.humanSilenceMs) {
      this.decide({ by: 'human', atMs });
    } else if (atMs >= this.timeoutMs) {
      // Nothing told a machine apart in time: talk to whoever it is.
      this.decide({ by: 'human', atMs });
    }
  }

  speechStarted(atMs: number): void {
    if (this.decision) return;
    const stretch = this.stretch;
    if (stretch && stretch.endMs !== null && atMs - stretch.endMs < MACHINE_DETECTION.greetingGapMs)
      stretch.endMs = null;
    else this.stretch = { startMs: atMs, endMs: null };
  }

  speechEnded(atMs: number): void {
    if (this.stretch && this.stretch.endMs === null) this.stretch.endMs = atMs;
  }

  /** Words recognised so far (a partial reading or a whole turn) at `atMs`. */
  words(text: string, atMs: number): void {
    if (!this.decision && soundsLikeMachine(text)) this.decide({ by: 'machine', evidence: 'words', atMs });
  }

  /** The carrier's own detection said so. */
  carrier(by: 'machine' | 'human', atMs: number): void {
    if (this.decision) return;
    this.decide(by === 'machine' ? { by, evidence: 'carrier', atMs } : { by, atMs });
  }

  stop(): void {
    this.stopped = true;
  }

  private decide(answerer: Answerer): void {
    this.decision = answerer;
    this.events.decided(answerer);
  }
}
