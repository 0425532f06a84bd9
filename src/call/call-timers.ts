// The call's own timers: the caller's silence (reminders, then the end), the longest a call may
// last, and the organization's guard (its credit balance), checked every second.
import type { DisconnectionReason } from '../records/record.ts';
import type { TimerHandle, Timers } from '../timers.ts';
import type { CallClock } from './call-clock.ts';

export const CALL_TIMER_DEFAULTS = {
  guardIntervalMs: 1000,
} as const;

export interface CallTimerEvents {
  /**
   * The line was quiet for the reminder trigger: time to ask whether the caller is still there (`n`: 1 for the first).
   */
  remind(n: number): void;
  /** Quiet again for as long after the last reminder (or, with none, for the inactivity timeout). */
  inactive(): void;
  maxDuration(): void;
  /** The guard found a reason the call may not go on (credit balance used up). */
  limitReached(reason: DisconnectionReason): void;
}

export interface CallTimerOptions {
  timers: Timers;
  clock: CallClock;
  inactivityTimeoutMs: number;
  /** Quiet before each reminder, and after the last before the end; the inactivity timeout when unset. */
  reminderTriggerMs?: number | undefined;
  /** Reminders in one stretch of the caller's silence (1 when unset; 0: the call ends at the first timeout). */
  reminderMaxCount?: number | undefined;
  maxDurationMs: number;
  /** Checked every second with the time since the call connected; a reason ends the call. */
  guard?: ((connectedMs: number) => Promise<DisconnectionReason | null>) | undefined;
  events: CallTimerEvents;
}

export class CallTimers {
  private inactivity: TimerHandle | undefined;
  private max: TimerHandle | undefined;
  private guard: TimerHandle | undefined;
  /** Reminders given since the caller last spoke. */
  private reminders = 0;
  private stopped = false;

  constructor(private readonly o: CallTimerOptions) {}

  /** The call connected: the longest it may last and the guard start counting. */
  start(): void {
    this.scheduleMax(this.o.maxDurationMs);
    if (this.o.guard) this.scheduleGuard(this.o.guard);
  }

  /** Nobody speaks and nothing is being answered: silence starts counting. */
  armInactivity(): void {
    if (this.stopped) return;
    this.o.timers.clearTimeout(this.inactivity);
    const maxReminders = this.o.reminderMaxCount ?? 1;
    const ms =
      maxReminders === 0 ? this.o.inactivityTimeoutMs : (this.o.reminderTriggerMs ?? this.o.inactivityTimeoutMs);
    this.inactivity = this.o.timers.setTimeout(() => {
      this.inactivity = undefined;
      if (this.stopped) return;
      if (this.reminders >= maxReminders) {
        this.o.events.inactive();
        return;
      }
      this.reminders++;
      this.o.events.remind(this.reminders);
    }, ms);
  }

  /** Someone holds the floor again. */
  disarmInactivity(): void {
    this.o.timers.clearTimeout(this.inactivity);
    this.inactivity = undefined;
  }

  /** The caller took a turn: the next silence gets its reminders again. */
  callerSpoke(): void {
    this.reminders = 0;
  }

  stop(): void {
    this.stopped = true;
    for (const handle of [this.inactivity, this.max, this.guard]) this.o.timers.clearTimeout(handle);
  }

  /**
   * Node runs a timer from the event loop's cached time, which can lag the clock the call's start
   * was read from by a millisecond: a timer that fires early waits out the rest, so a call never
   * ends before its maximum.
   */
  private scheduleMax(ms: number): void {
    this.max = this.o.timers.setTimeout(() => {
      const left = this.o.maxDurationMs - this.o.clock.sinceStart();
      if (left > 0) this.scheduleMax(left);
      else this.o.events.maxDuration();
    }, ms);
  }

  private scheduleGuard(guard: (connectedMs: number) => Promise<DisconnectionReason | null>): void {
    this.guard = this.o.timers.setTimeout(() => {
      if (this.stopped) return;
      guard(this.o.clock.sinceStart()).then(
        (reason) => {
          if (this.stopped) return;
          if (reason) this.o.events.limitReached(reason);
          else this.scheduleGuard(guard);
        },
        // The store did not answer this time: the balance is read again at the next check.
        () => {
          if (!this.stopped) this.scheduleGuard(guard);
        },
      );
    }, CALL_TIMER_DEFAULTS.guardIntervalMs);
  }
}
