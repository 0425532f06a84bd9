// No RTP for a while means the far side is gone without a BYE (a phone that lost its network, a
// trunk that restarted): the call ends with a reason that says so. Packets come fifty times a
// second, so a packet only notes the time; the one timer checks the note when it fires and waits
// again for what is left, instead of being set again per packet.
import type { TimerHandle, Timers } from '../../timers.ts';

/** No media for this long ends the call (the 30 s). */
export const MEDIA_TIMEOUT_MS = 30_000;

export class MediaTimeout {
  private lastHeard: number;
  private timer: TimerHandle | undefined;
  private fired = false;

  constructor(
    private readonly timers: Timers,
    private readonly onTimeout: () => void,
    private readonly timeoutMs: number = MEDIA_TIMEOUT_MS,
  ) {
    this.lastHeard = timers.now();
    this.arm(timeoutMs);
  }

  /** Media arrived. */
  heard(): void {
    this.lastHeard = this.timers.now();
    if (this.timer === undefined && !this.fired) this.arm(this.timeoutMs);
  }

  /**
   * Stops watching while the far side may rightly send nothing (the call is on hold, its SDP
   * says sendonly or inactive); `heard()` or `resume()` starts the watch again.
   */
  pause(): void {
    this.timers.clearTimeout(this.timer);
    this.timer = undefined;
  }

  resume(): void {
    this.heard();
  }

  stop(): void {
    this.pause();
    this.fired = true;
  }

  private arm(ms: number): void {
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined;
      const quiet = this.timers.now() - this.lastHeard;
      if (quiet < this.timeoutMs) return this.arm(this.timeoutMs - quiet);
      this.fired = true;
      this.onTimeout();
    }, ms);
  }
}
