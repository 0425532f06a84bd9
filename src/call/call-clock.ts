// The call's own clock: wall time from the injected timers, and time since the call connected,
// which every transcript time and recording offset counts from.
import type { Timers } from '../timers.ts';

export class CallClock {
  private start = 0;

  constructor(private readonly timers: Timers) {}

  /** The call connected now; returns that wall time. */
  connect(): number {
    this.start = this.timers.now();
    return this.start;
  }

  /** Wall time (epoch ms with real timers) at which the call connected. */
  get startWall(): number {
    return this.start;
  }

  now(): number {
    return this.timers.now();
  }

  /** Milliseconds since the call connected. */
  sinceStart(wall: number = this.timers.now()): number {
    return wall - this.start;
  }

  /** Seconds since the call connected, millisecond precision (transcript times). */
  seconds(wall: number = this.timers.now()): number {
    return Math.round(wall - this.start) / 1000;
  }
}
