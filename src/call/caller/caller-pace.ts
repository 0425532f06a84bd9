// How long this caller pauses in the middle of a turn, learnt as the call goes: a caller who stops
// for a second to think should not be answered in that second where their words do not tell
// whether they are done (end-of-turn.ts; after a finished sentence the agent still answers at
// once). Two kinds of pause teach it:
// - a pause the caller spoke on from, where the end of turn was ready to answer short of max_ms
//   (the words looked finished, or did not tell): a pause that put the turn in doubt. Pauses after
//   "and" or half a number were waited on anyway and teach nothing; breaths under `doubtMs` neither;
// - a pause the agent answered into, when the caller then talked over the answer's start: the turn
//   was not over.
// How the wait covers those pauses is the owner's choice:
// - "usual": a moving average of them, so a caller's latest habit counts most. A pause longer than
//   that and the margin is still cut into, but a turn that waits it is answered sooner;
// - "longest": the longest of the last few, so a caller's pauses of late are all covered.
// CallerInput waits the longest after words in doubt (a trailing comma, an unsure shape), which few
// finished turns end in, and the usual pause after a number of no known length, which every such
// number waits: its own pace over the pauses after digits alone, in doubt or not, the pauses between
// groups of a number being read.

export const CALLER_PACE = {
  /** A pause shorter than this is a breath between words: the VAD reports pauses from 200 ms. */
  doubtMs: 300,
  /** The caller talked over the agent within this long of their last words: the agent had answered too soon. */
  cutInWithinMs: 2_500,
  /** Weight of the newest pause in the moving estimate. */
  alpha: 0.5,
  /** Silence past the caller's usual pause before their turn is taken to be over. */
  marginMs: 250,
  /** "longest" covers this many of the caller's latest pauses. */
  recentPauses: 3,
} as const;

export type PaceCover = 'usual' | 'longest';

export class CallerPace {
  private estimate: number | null = null;
  private readonly recent: number[] = [];

  constructor(private readonly cover: PaceCover) {}

  /** A pause of `ms` inside one of the caller's turns, that put the turn in doubt. */
  paused(ms: number): void {
    if (ms < CALLER_PACE.doubtMs) return;
    this.estimate = this.estimate === null ? ms : CALLER_PACE.alpha * ms + (1 - CALLER_PACE.alpha) * this.estimate;
    this.recent.push(ms);
    if (this.recent.length > CALLER_PACE.recentPauses) this.recent.shift();
  }

  /** The silence that covers this caller's pauses within a turn, ms; null until one was heard. */
  waitMs(): number | null {
    if (this.estimate === null) return null;
    const covered = this.cover === 'longest' ? Math.max(...this.recent) : this.estimate;
    return Math.round(covered + CALLER_PACE.marginMs);
  }
}
