// Timers come in through this, with the clock they run on, so a test can run an hour of call
// time in milliseconds and assert exact timestamps.

export type TimerHandle = { readonly id: number };

export interface Timers {
  /** Milliseconds, monotonic within a call (wall-clock epoch ms for real timers). */
  now(): number;
  setTimeout(callback: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle | undefined): void;
}

interface RealHandle extends TimerHandle {
  readonly timer: NodeJS.Timeout;
}

export const realTimers: Timers = {
  now: () => Date.now(),
  setTimeout(callback, ms): RealHandle {
    return { id: 0, timer: setTimeout(callback, Math.max(0, ms)) };
  },
  clearTimeout(handle) {
    if (handle) clearTimeout((handle as RealHandle).timer);
  },
};

/** Timers driven by hand: `advance` runs every due callback in time order. */
export class ManualTimers implements Timers {
  private current: number;
  private nextId = 1;
  private readonly pending = new Map<number, { at: number; callback: () => void }>();

  constructor(start = 0) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.pending.set(id, { at: this.current + Math.max(0, ms), callback });
    return { id };
  }

  clearTimeout(handle: TimerHandle | undefined): void {
    if (handle) this.pending.delete(handle.id);
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  /** Moves time forward without firing anything, as an event loop busy with other work does. */
  stall(ms: number): void {
    this.current += ms;
  }

  /** Moves time forward, firing due timers in order (timers they set are honoured too). */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      let nextId = -1;
      let nextAt = Infinity;
      for (const [id, t] of this.pending) {
        if (t.at <= target && (t.at < nextAt || (t.at === nextAt && id < nextId))) {
          nextAt = t.at;
          nextId = id;
        }
      }
      if (nextId === -1) break;
      const timer = this.pending.get(nextId)!;
      this.pending.delete(nextId);
      this.current = Math.max(this.current, timer.at);
      timer.callback();
    }
    this.current = target;
  }
}
