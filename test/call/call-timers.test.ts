import { describe, expect, it } from 'vitest';
import { CallClock } from '../../src/call/call-clock.ts';
import { CallTimers } from '../../src/call/call-timers.ts';
import type { DisconnectionReason } from '../../src/records/record.ts';
import { ManualTimers, type Timers } from '../../src/timers.ts';

function setup(
  options: {
    guard?: (ms: number) => Promise<DisconnectionReason | null>;
    timers?: Timers & { advance(ms: number): void };
    reminderTriggerMs?: number;
    reminderMaxCount?: number;
  } = {},
) {
  const timers = options.timers ?? new ManualTimers(0);
  const clock = new CallClock(timers);
  clock.connect();
  const log: string[] = [];
  const callTimers = new CallTimers({
    timers,
    clock,
    inactivityTimeoutMs: 10_000,
    reminderTriggerMs: options.reminderTriggerMs,
    reminderMaxCount: options.reminderMaxCount,
    maxDurationMs: 60_000,
    guard: options.guard,
    events: {
      remind: (n) => log.push(`remind ${n} @${clock.sinceStart()}`),
      inactive: () => log.push(`inactive @${clock.sinceStart()}`),
      maxDuration: () => log.push(`max @${clock.sinceStart()}`),
      limitReached: (reason) => log.push(`${reason} @${clock.sinceStart()}`),
    },
  });
  return { timers, callTimers, log };
}

describe('CallTimers', () => {
  it('after inactivity_timeout_ms of quiet asks for a reminder, and after as long again ends the call', () => {
    const s = setup();
    s.callTimers.armInactivity();
    s.timers.advance(10_000);
    expect(s.log).toEqual(['remind 1 @10000']);
    s.callTimers.armInactivity(); // the reminder played, the line is quiet again
    s.timers.advance(10_000);
    expect(s.log).toEqual(['remind 1 @10000', 'inactive @20000']);
  });

  it('gives reminderMaxCount reminders reminderTriggerMs apart before ending; with 0 ends at the inactivity timeout', () => {
    const s = setup({ reminderTriggerMs: 3_000, reminderMaxCount: 3 });
    for (let i = 0; i < 4; i++) {
      s.callTimers.armInactivity();
      s.timers.advance(3_000);
    }
    expect(s.log).toEqual(['remind 1 @3000', 'remind 2 @6000', 'remind 3 @9000', 'inactive @12000']);
    const none = setup({ reminderTriggerMs: 3_000, reminderMaxCount: 0 });
    none.callTimers.armInactivity();
    none.timers.advance(9_999);
    expect(none.log).toEqual([]);
    none.timers.advance(1);
    expect(none.log).toEqual(['inactive @10000']);
  });

  it('counts no silence while someone holds the floor, and gives a new reminder after the caller spoke', () => {
    const s = setup();
    s.callTimers.armInactivity();
    s.timers.advance(9_000);
    s.callTimers.disarmInactivity();
    s.timers.advance(30_000);
    expect(s.log).toEqual([]);
    s.callTimers.armInactivity();
    s.timers.advance(10_000);
    s.callTimers.callerSpoke();
    s.callTimers.armInactivity();
    s.timers.advance(10_000);
    expect(s.log).toEqual(['remind 1 @49000', 'remind 1 @59000']);
  });

  it('ends the call at max_duration_ms exactly', () => {
    const s = setup();
    s.callTimers.start();
    s.timers.advance(59_999);
    expect(s.log).toEqual([]);
    s.timers.advance(1);
    expect(s.log).toEqual(['max @60000']);
  });

  it('waits out a maximum-duration timer that fires early, as Node’s may by a millisecond', () => {
    // Timers that fire 1 ms before they are due, as a timer set from a stale event-loop time does
    // (a wait of 1 ms still takes one: the loop's time moves on).
    const manual = new ManualTimers(0);
    const early: Timers & { advance(ms: number): void } = {
      now: () => manual.now(),
      setTimeout: (fn, ms) => manual.setTimeout(fn, ms > 1 ? ms - 1 : ms),
      clearTimeout: (h) => manual.clearTimeout(h),
      advance: (ms) => manual.advance(ms),
    };
    const s = setup({ timers: early });
    s.callTimers.start();
    s.timers.advance(60_000);
    expect(s.log).toEqual(['max @60000']);
  });

  it('checks the guard every second and ends the call with its reason', async () => {
    const s = setup({ guard: async (ms) => (ms >= 3000 ? 'insufficient_balance' : null) });
    s.callTimers.start();
    // The guard reads the balance from the store: each check is answered before the next is set.
    for (let second = 0; second < 5; second++) {
      s.timers.advance(1000);
      await new Promise((r) => setImmediate(r));
    }
    expect(s.log).toEqual(['insufficient_balance @3000']);
  });

  it('once stopped, fires nothing', () => {
    const s = setup({ guard: async () => 'insufficient_balance' });
    s.callTimers.start();
    s.callTimers.armInactivity();
    s.callTimers.stop();
    s.callTimers.armInactivity();
    s.timers.advance(120_000);
    expect(s.log).toEqual([]);
  });
});
