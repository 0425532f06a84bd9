// The one retry delay of the service: capped exponential backoff, jittered to between half and all
// of its step so that many callers retrying at once spread out instead of bunching up, and no
// retry ever waits for nothing. Randomness comes in, so a test states the exact delay. The model
// client (factor 2, retries within a turn) and the webhook sender (factor 3, retries kept in the
// outbox across restarts) both wait this long; undici's own retry interceptor is not used because
// it neither takes injected randomness and timers nor knows when a retry would repeat spoken words.

export interface BackoffSteps {
  /** The first retry's step. */
  baseMs: number;
  /** No step is longer. */
  maxMs: number;
  /** Each step is this many times the one before. */
  factor: number;
}

/** The delay before retry number `retry` (the first retry is 1); `random` gives [0, 1). */
export function jitteredBackoff(retry: number, steps: BackoffSteps, random: () => number): number {
  const step = Math.min(steps.maxMs, steps.baseMs * steps.factor ** (retry - 1));
  return Math.round(step * (0.5 + 0.5 * random()));
}
