// The parts of a call register once for its teardown, so the session stops and closes them all in
// one call each, in the order they registered, and a new part cannot be forgotten at the end.

/** A part of the call with something to let go of. */
export interface CallPart {
  /** The call is ending: no new work starts (last words may still play). */
  stop?(): void;
  /** The call is over: what the part holds is released. */
  close?(): void;
}

export class CallTeardown {
  private readonly parts: CallPart[] = [];
  private stage: 'running' | 'stopped' | 'closed' = 'running';

  /** `failed`: a part that threw while stopping or closing (the others still are). */
  constructor(private readonly failed: (error: unknown) => void) {}

  /** Registers `part`; returns it, so a part can be made and registered in one line. */
  add<T extends CallPart>(part: T): T {
    this.parts.push(part);
    return part;
  }

  /** Stops every part, once. */
  stop(): void {
    if (this.stage !== 'running') return;
    this.stage = 'stopped';
    for (const part of this.parts) this.each(() => part.stop?.());
  }

  /** Closes every part, once, stopping them first if they were not. */
  close(): void {
    this.stop();
    if (this.stage === 'closed') return;
    this.stage = 'closed';
    for (const part of this.parts) this.each(() => part.close?.());
  }

  private each(run: () => void): void {
    try {
      run();
    } catch (error) {
      this.failed(error);
    }
  }
}
