import { describe, expect, it } from 'vitest';
import { CALLER_PACE, CallerPace } from '../../../src/call/caller/caller-pace.ts';

describe('CallerPace', () => {
  it('knows nothing until the caller pauses in doubt, then covers that pause and a margin', () => {
    const pace = new CallerPace();
    expect(pace.waitMs()).toBeNull();
    pace.paused(900);
    expect(pace.waitMs()).toBe(900 + CALLER_PACE.marginMs);
  });

  it('ignores breaths between words', () => {
    const pace = new CallerPace();
    pace.paused(CALLER_PACE.doubtMs - 1);
    expect(pace.waitMs()).toBeNull();
  });

  it("follows the caller's latest habit: a moving average of their pauses", () => {
    const pace = new CallerPace();
    pace.paused(1200);
    pace.paused(400);
    expect(pace.waitMs()).toBe(
      Math.round(CALLER_PACE.alpha * 400 + (1 - CALLER_PACE.alpha) * 1200) + CALLER_PACE.marginMs,
    );
  });
});
