import { describe, expect, it } from 'vitest';
import { jitteredBackoff } from '../../src/net/backoff.ts';

describe('the jittered backoff', () => {
  const doubling = { baseMs: 250, maxMs: 2_000, factor: 2 };

  it('grows by its factor from the base, one step per retry', () => {
    expect([1, 2, 3, 4].map((retry) => jitteredBackoff(retry, doubling, () => 1))).toEqual([250, 500, 1_000, 2_000]);
    expect(
      [1, 2, 3].map((retry) => jitteredBackoff(retry, { baseMs: 10_000, maxMs: 3_600_000, factor: 3 }, () => 1)),
    ).toEqual([10_000, 30_000, 90_000]);
  });

  it('never waits longer than its cap, however many retries', () => {
    expect(jitteredBackoff(40, doubling, () => 1)).toBe(2_000);
  });

  it('jitters within half to all of the step, by the randomness it is given', () => {
    expect(jitteredBackoff(3, doubling, () => 0)).toBe(500);
    expect(jitteredBackoff(3, doubling, () => 0.5)).toBe(750);
    expect(jitteredBackoff(3, doubling, () => 0.999)).toBe(1_000);
  });
});
