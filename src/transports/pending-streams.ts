// Media sockets that have not yet said which call they belong to cost memory and a timer each and
// prove nothing: only so many may wait at once, so a flood of idle sockets cannot crowd out calls.

export const PENDING_STREAM_DEFAULTS = {
  /** Unidentified media sockets allowed at once across both transports (a real start takes milliseconds). */
  max: 256,
} as const;

export class PendingStreams {
  private waiting = 0;

  constructor(readonly max: number = PENDING_STREAM_DEFAULTS.max) {}

  get count(): number {
    return this.waiting;
  }

  /** A slot for a new socket until it identifies itself or closes (the returned release, safe to call twice); undefined when full. */
  admit(): (() => void) | undefined {
    if (this.waiting >= this.max) return undefined;
    this.waiting++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.waiting--;
    };
  }
}
