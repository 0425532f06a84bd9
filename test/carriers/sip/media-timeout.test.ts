import { describe, expect, it } from 'vitest';
import { MediaTimeout } from '../../../src/carriers/sip/media-timeout.ts';
import { ManualTimers } from '../../../src/timers.ts';

describe('media timeout', () => {
  it('fires once after 30 s with no media', () => {
    const timers = new ManualTimers();
    let fired = 0;
    new MediaTimeout(timers, () => fired++);
    timers.advance(29_999);
    expect(fired).toBe(0);
    timers.advance(1);
    expect(fired).toBe(1);
    timers.advance(60_000);
    expect(fired).toBe(1);
  });

  it('counts from the last packet heard, with one timer however many packets come', () => {
    const timers = new ManualTimers();
    let firedAt: number | undefined;
    const timeout = new MediaTimeout(timers, () => (firedAt = timers.now()));
    for (let t = 0; t < 10_000; t += 20) {
      timeout.heard();
      expect(timers.pendingCount).toBe(1);
      timers.advance(20);
    }
    timers.advance(40_000);
    expect(firedAt).toBe(9_980 + 30_000);
  });

  it('does not fire while paused (the call is on hold), and watches again from resume', () => {
    const timers = new ManualTimers();
    let firedAt: number | undefined;
    const timeout = new MediaTimeout(timers, () => (firedAt = timers.now()), 1000);
    timeout.pause();
    timers.advance(5000);
    expect(firedAt).toBeUndefined();
    timeout.resume();
    timers.advance(1000);
    expect(firedAt).toBe(6000);
  });

  it('never fires after stop', () => {
    const timers = new ManualTimers();
    let fired = 0;
    const timeout = new MediaTimeout(timers, () => fired++, 1000);
    timeout.stop();
    timeout.heard();
    timers.advance(5000);
    expect(fired).toBe(0);
    expect(timers.pendingCount).toBe(0);
  });
});
