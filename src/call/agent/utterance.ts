// One agent utterance: its text as it is produced, its audio as it is queued, and its playback as
// the far side confirms it. States: queued (text and audio on their way, nothing played yet) →
// speaking (the far side began playing it) → heard (played to the end) or interrupted (cut, its
// text then being the words played); `done` resolves once it is heard or interrupted. One that may
// not be interrupted (hold music, last words) is cut only when the call or the flow that said it ends.

import type { TtsUtteranceStream, WordTiming } from '../../speech/types.ts';

export type UtteranceState = 'queued' | 'speaking' | 'heard' | 'interrupted';

/**
 * The marks that bracket an utterance's audio on the line ("u7:start", "u7:end"): the far side
 * echoes each once the audio before it has played. A simulated phone reads them to know when the
 * agent has finished speaking, as a person would hear it.
 */
export const utteranceMark = {
  start: (id: number): string => `u${id}:start`,
  end: (id: number): string => `u${id}:end`,
  parse(name: string): { id: number; edge: 'start' | 'end' } | null {
    const match = /^u(\d+):(start|end)$/.exec(name);
    return match ? { id: Number(match[1]), edge: match[2] as 'start' | 'end' } : null;
  },
};

/** A streaming voice's account of an utterance: what it was given to say, the words it timed, the audio so far. */
export interface VoiceTiming {
  /** Each piece as written (the transcript's words) and as given to the voice (numbers as words, …). */
  readonly pieces: { text: string; spoken: string }[];
  /** The voice's timed words (spoken form), seconds from the utterance's first sample; null where it times none. */
  words(): readonly WordTiming[] | null;
  /** Audio queued so far. */
  audioMs: number;
  /** The voice's lead-in cut before its first queued sample (audio/lead-in.ts): its words play that much sooner. */
  leadInCutMs: number;
}

const wordsOf = (text: string): string[] => text.split(/\s+/).filter(Boolean);

/**
 * The written words the caller heard `playedMs` into an utterance, by the voice's own word times: a word
 * counts once its start has played (as in the estimate). The timed words are the spoken form; each piece
 * maps back to its written words in proportion (a number said as three words is one written word). A
 * voice that times no words: the estimate from the audio length over the whole utterance.
 */
export function wordsHeard(timing: VoiceTiming, playedMs: number): string {
  const timed = timing.words();
  if (timed === null)
    return estimateWordsPlayed(
      [{ text: timing.pieces.map((p) => p.text).join(' '), audioMs: timing.audioMs }],
      playedMs,
    );
  let heard = 0;
  while (heard < timed.length && timed[heard]!.start * 1000 - timing.leadInCutMs < playedMs) heard++;
  const words: string[] = [];
  for (const piece of timing.pieces) {
    const written = wordsOf(piece.text);
    const spoken = wordsOf(piece.spoken).length;
    if (heard >= spoken) {
      words.push(...written);
      heard -= spoken;
      continue;
    }
    if (heard > 0) words.push(...written.slice(0, Math.ceil((heard * written.length) / spoken)));
    break;
  }
  return words.join(' ');
}

/** The words that had played `playedMs` into a run of pieces, estimated from each piece's audio length. */
function estimateWordsPlayed(pieces: readonly { text: string; audioMs: number }[], playedMs: number): string {
  const words: string[] = [];
  let offset = 0;
  for (const piece of pieces) {
    const pieceWords = wordsOf(piece.text);
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

export class Utterance {
  state: UtteranceState = 'queued';
  /** What it says; once interrupted, only the words the caller heard. */
  text = '';
  /** Each synthesized piece: its text and audio length, in order. */
  readonly pieces: { text: string; audioMs: number }[] = [];
  /** Spoken by a streaming voice (a call's voice session): that voice's stream and its account of the words. */
  voice: TtsUtteranceStream | null = null;
  voiceTiming: VoiceTiming | null = null;
  framesQueued = 0;
  /** Wall ms its first frame started playing: the far side's confirmation, or the pacer's estimate. */
  startedAt: number | null = null;
  estimatedStart: number | null = null;
  /** No more text will come. */
  closed = false;
  /** Synthesis of its pieces, one after another, after all the audio of the utterance before it. */
  synthesis: Promise<void>;
  /** true once heard in full, false once interrupted. */
  readonly done: Promise<boolean>;
  /** Resolves once all its audio is queued (closed and synthesized) or it was cut: what follows it may start. */
  readonly allQueued: Promise<void>;
  private settle!: (heard: boolean) => void;
  private queued!: () => void;

  /** `after`: all audio of the utterance before it is queued; `interruptible`: the caller's barge-in may cut it. */
  constructor(
    readonly id: number,
    after: Promise<void> = Promise.resolve(),
    readonly interruptible = true,
  ) {
    this.synthesis = after;
    this.done = new Promise((resolve) => (this.settle = resolve));
    this.allQueued = new Promise((resolve) => (this.queued = resolve));
  }

  /** Closed, and every piece synthesized into the pacer. */
  audioQueued(): void {
    this.queued();
  }

  get interrupted(): boolean {
    return this.state === 'interrupted';
  }

  /** The far side began playing it. */
  playing(at: number): void {
    this.startedAt = at;
    this.state = 'speaking';
  }

  /** Played to the end. */
  heard(): void {
    this.state = 'heard';
    this.settle(true);
  }

  /** Once interrupted: the words it still had to say, from where it was cut (to resume after a false interruption). */
  unsaid = '';

  /** Cut at `now`: its text becomes the words played by then; returns when playback began, or null if it never did. */
  interrupt(now: number): number | null {
    const started =
      this.startedAt ?? (this.estimatedStart !== null && this.estimatedStart <= now ? this.estimatedStart : null);
    const all = this.text.split(/\s+/).filter(Boolean);
    this.text = started === null ? '' : this.wordsPlayed(now - started);
    this.unsaid = all.slice(this.text.split(/\s+/).filter(Boolean).length).join(' ');
    this.state = 'interrupted';
    this.closed = true;
    this.queued();
    this.settle(false);
    return started;
  }

  /** How much of its audio had played by `now` (ms): from its start to now, at most all its audio so far. */
  playedMs(now: number): number {
    const started = this.startedAt ?? this.estimatedStart;
    if (started === null || started > now) return 0;
    return Math.min(
      now - started,
      this.voiceTiming ? this.voiceTiming.audioMs : this.pieces.reduce((ms, piece) => ms + piece.audioMs, 0),
    );
  }

  /**
   * The words that had played `playedMs` into the utterance: by the streaming voice's word times where it
   * spoke it, else estimated from each piece's audio length.
   */
  wordsPlayed(playedMs: number): string {
    return this.voiceTiming ? wordsHeard(this.voiceTiming, playedMs) : estimateWordsPlayed(this.pieces, playedMs);
  }
}
