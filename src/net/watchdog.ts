// The deadline and stall watchdog of an outbound request: one abort signal that fires when the
// caller stops the request (its own signal) or when an armed limit runs out, with the reason the
// caller chose for each. A deadline is one arm for the whole request; a stall watch is armed only
// while the caller waits on the server and disarmed while it holds what arrived, so a slow listener
// (a voice played in real time, a consumer holding a token) is never taken for a silent server.
// That is why it is a wrapper the reading loop drives and not an undici interceptor: at the
// dispatcher the body is pushed as it arrives and the consumer's pace is invisible, and undici's
// own headersTimeout/bodyTimeout run on its clock, not on the injected timers tests drive.

import type { TimerHandle, Timers } from '../timers.ts';

/** The service's one timer interface; a watchdog needs only to set and clear. */
export type WatchdogTimers = Pick<Timers, 'setTimeout' | 'clearTimeout'>;

export class Watchdog {
  private readonly controller = new AbortController();
  private timer: { handle: TimerHandle } | undefined;
  private fired = false;
  private readonly unlink: () => void;
  /** Aborts the request: the caller stopped it, or a limit ran out. */
  readonly signal: AbortSignal = this.controller.signal;

  /** `outer`: the caller's own signal; `stopped`: the abort reason when it fires (its own reason otherwise). */
  constructor(
    private readonly timers: WatchdogTimers,
    outer?: AbortSignal,
    stopped?: () => unknown,
  ) {
    const onAbort = (): void => this.controller.abort(stopped ? stopped() : outer?.reason);
    if (outer?.aborted) onAbort();
    else outer?.addEventListener('abort', onAbort, { once: true });
    this.unlink = () => outer?.removeEventListener('abort', onAbort);
  }

  /** A limit ran out (rather than the caller stopping the request). */
  get expired(): boolean {
    return this.fired;
  }

  /** Aborts with `reason()` unless disarmed (or armed again) within `ms`. */
  arm(ms: number, reason: () => unknown = () => new DOMException(`no answer within ${ms} ms`, 'TimeoutError')): void {
    this.disarm();
    const handle = this.timers.setTimeout(() => {
      this.timer = undefined;
      if (this.controller.signal.aborted) return;
      this.fired = true;
      this.controller.abort(reason());
    }, ms);
    this.timer = { handle };
  }

  disarm(): void {
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer.handle);
    this.timer = undefined;
  }

  /** The request is over: no timer left, the caller's signal let go. */
  close(): void {
    this.disarm();
    this.unlink();
  }
}
