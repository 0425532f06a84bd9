import { describe, expect, it } from 'vitest';
import { CALLER_PACE, CallerPace } from '../../../src/call/caller/caller-pace.ts';

describe('CallerPace', () => {
  it('knows nothing until the caller pauses in doubt, then covers that pause and a margin', () => {
    for (const cover of ['usual', 'longest'] as const) {
      const pace = new CallerPace(cover);
      expect(pace.waitMs()).toBeNull();
      pace.paused(900);
      expect(pace.waitMs()).toBe(900 + CALLER_PACE.marginMs);
    }
  });

  it('ignores breaths between words', () => {
    const pace = new CallerPace('longest');
    pace.paused(CALLER_PACE.doubtMs - 1);
    expect(pace.waitMs()).toBeNull();
  });

  it("usual: follows the caller's latest habit, a moving average of their pauses", () => {
    const pace = new CallerPace('usual');
    pace.paused(1200);
    pace.paused(400);
    expect(pace.waitMs()).toBe(
      Math.round(CALLER_PACE.alpha * 400 + (1 - CALLER_PACE.alpha) * 1200) + CALLER_PACE.marginMs,
    );
  });

  it('longest: covers the longest of the caller’s latest pauses, and forgets older ones', () => {
    const pace = new CallerPace('longest');
    pace.paused(1400);
    for (let i = 1; i < CALLER_PACE.recentPauses; i++) pace.paused(800);
    expect(pace.waitMs()).toBe(1400 + CALLER_PACE.marginMs);
    // The 1,400 ms pause is now older than the last CALLER_PACE.recentPauses.
    pace.paused(900);
    expect(pace.waitMs()).toBe(900 + CALLER_PACE.marginMs);
  });
});
