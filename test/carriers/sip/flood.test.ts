import { describe, expect, it } from 'vitest';
import { InviteFloodGuard } from '../../../src/carriers/sip/flood.ts';
import { ManualTimers } from '../../../src/timers.ts';

describe('INVITE flood guard', () => {
  it('lets a source’s burst through, refuses the next with a Retry-After, and refills at the steady rate', () => {
    const clock = new ManualTimers(0);
    const guard = new InviteFloodGuard(clock, { burst: 3, perSecond: 2 });
    expect([guard.take('192.0.2.1'), guard.take('192.0.2.1'), guard.take('192.0.2.1')]).toEqual([true, true, true]);
    expect(guard.take('192.0.2.1')).toBe(false);
    expect(guard.retryAfterSeconds('192.0.2.1')).toBe(1);
    expect(guard.take('192.0.2.2')).toBe(true);
    clock.advance(499);
    expect(guard.take('192.0.2.1')).toBe(false);
    clock.advance(1);
    expect(guard.take('192.0.2.1')).toBe(true);
    expect(guard.take('192.0.2.1')).toBe(false);
  });

  it('remembers a bounded number of sources, forgetting the least recently seen', () => {
    const guard = new InviteFloodGuard(new ManualTimers(0), { burst: 1, perSecond: 1, sources: 2 });
    expect(guard.take('a')).toBe(true);
    expect(guard.take('b')).toBe(true);
    expect(guard.take('b')).toBe(false);
    expect(guard.take('c')).toBe(true);
    expect(guard.size).toBe(2);
    // a was forgotten, so it starts over; b, seen more recently, still has no allowance.
    expect(guard.take('a')).toBe(true);
    expect(guard.size).toBe(2);
  });
});
