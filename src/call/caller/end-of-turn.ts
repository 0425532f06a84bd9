// When the caller's turn is over. At each pause the policy says how much longer to wait for more
// words; a rule on silence alone today, one that weighs the words so far can replace it without
// touching the rest of the call.

export interface CallerPause {
  /** How long the caller has already been silent (the VAD reports a pause after the fact), ms. */
  silentMs: number;
}

export interface EndOfTurnPolicy {
  /** Milliseconds still to wait from now; under 1 ends the turn at once. Speech in the meantime resumes the turn. */
  waitMs(pause: CallerPause): number;
}

/** The agent's `endpointing_ms` of silence ends the turn. */
export class SilenceEndOfTurn implements EndOfTurnPolicy {
  constructor(private readonly endpointingMs: number) {}

  waitMs(pause: CallerPause): number {
    return this.endpointingMs - pause.silentMs;
  }
}
