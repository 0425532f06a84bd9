// How long this caller pauses in the middle of a turn, learnt as the call goes: a caller who stops
// for a second to think should not be answered in that second where their words do not tell
// whether they are done (end-of-turn.ts; after a finished sentence the agent still answers at
// once). Two kinds of pause teach it:
// - a pause the caller spoke on from, where the end of turn was ready to answer short of max_ms
//   (the words looked finished, or did not tell): a pause that put the turn in doubt. Pauses after
//   "and" or half a number were waited on anyway and teach nothing; breaths under `doubtMs` neither;
// - a pause the agent answered into, when the caller then talked over the answer's start: the turn
//   was not over.
// The estimate is a moving average of those pauses, so a caller's latest habit counts most.
// CallerInput keeps a second one over the pauses after digits alone, in doubt or not: the pauses
// between groups of a number being read, which a number of no known length waits for.

export const CALLER_PACE = {
  /** A pause shorter than this is a breath between words: the VAD reports pauses from 200 ms. */
  doubtMs: 300,
  /** The caller talked over the agent within this long of their last words: the agent had answered too soon. */
  cutInWithinMs: 2_500,
  /** Weight of the newest pause in the moving estimate. */
  alpha: 0.5,
  /** Silence past the caller's usual pause before their turn is taken to be over. */
  marginMs: 250,
} as const;

export class CallerPace {
  private estimate: number | null = null;

  /** A pause of `ms` inside one of the caller's turns, that put the turn in doubt. */
  paused(ms: number): void {
    if (ms < CALLER_PACE.doubtMs) return;
    this.estimate = this.estimate === null ? ms : CALLER_PACE.alpha * ms + (1 - CALLER_PACE.alpha) * this.estimate;
  }

  /** The silence that covers this caller's pauses within a turn, ms; null until one was heard. */
  waitMs(): number | null {
    return this.estimate === null ? null : Math.round(this.estimate + CALLER_PACE.marginMs);
  }
}
