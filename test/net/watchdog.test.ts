import { describe, expect, it } from 'vitest';
import { Watchdog } from '../../src/net/watchdog.ts';
import { ManualTimers } from '../../src/timers.ts';

class Expired extends Error {}

describe('the deadline and stall watchdog', () => {
  it('a deadline aborts its signal with the chosen reason once its time runs out, and says it expired', () => {
    const timers = new ManualTimers();
    const watch = new Watchdog(timers);
    watch.arm(1_000, () => new Expired('1000 ms'));
    timers.advance(999);
    expect(watch.signal.aborted).toBe(false);
    timers.advance(1);
    expect(watch.signal.aborted).toBe(true);
    expect(watch.signal.reason).toBeInstanceOf(Expired);
    expect(watch.expired).toBe(true);
  });

  it('without a chosen reason a deadline aborts with a TimeoutError', () => {
    const timers = new ManualTimers();
    const watch = new Watchdog(timers);
    watch.arm(50);
    timers.advance(50);
    expect(watch.signal.reason).toMatchObject({ name: 'TimeoutError' });
  });

  it('a stall watch disarmed while the caller holds what arrived never fires, however long it holds it', () => {
    const timers = new ManualTimers();
    const watch = new Watchdog(timers);
    for (let read = 0; read < 5; read++) {
      watch.arm(100); // waiting on the server
      timers.advance(99);
      watch.disarm(); // a chunk arrived: the caller holds it
      timers.advance(10_000);
    }
    expect(watch.signal.aborted).toBe(false);
    expect(timers.pendingCount).toBe(0);
  });

  it('arming again restarts the limit from now', () => {
    const timers = new ManualTimers();
    const watch = new Watchdog(timers);
    watch.arm(100);
    timers.advance(80);
    watch.arm(100);
    timers.advance(80);
    expect(watch.signal.aborted).toBe(false);
    timers.advance(20);
    expect(watch.expired).toBe(true);
  });

  it('the caller’s own abort stops it with the stop reason, and is not an expiry', () => {
    const timers = new ManualTimers();
    const caller = new AbortController();
    const watch = new Watchdog(timers, caller.signal, () => new Error('stopped by the caller'));
    watch.arm(100);
    caller.abort();
    expect(watch.signal.reason).toMatchObject({ message: 'stopped by the caller' });
    expect(watch.expired).toBe(false);
    timers.advance(100);
    expect(watch.expired).toBe(false);
  });

  it('a caller’s signal aborted already aborts it at once, with the caller’s reason when no stop reason is chosen', () => {
    const caller = new AbortController();
    caller.abort(new Error('gone'));
    const watch = new Watchdog(new ManualTimers(), caller.signal);
    expect(watch.signal.reason).toMatchObject({ message: 'gone' });
  });

  it('close leaves no timer behind and lets go of the caller’s signal', () => {
    const timers = new ManualTimers();
    const caller = new AbortController();
    const watch = new Watchdog(timers, caller.signal);
    watch.arm(100);
    watch.close();
    expect(timers.pendingCount).toBe(0);
    caller.abort();
    expect(watch.signal.aborted).toBe(false);
  });
});
