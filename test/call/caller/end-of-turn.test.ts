import { describe, expect, it } from 'vitest';
import { SilenceEndOfTurn } from '../../../src/call/caller/end-of-turn.ts';

describe('SilenceEndOfTurn', () => {
  it('waits endpointing_ms from the speech end, less the silence the VAD already took to report it', () => {
    const policy = new SilenceEndOfTurn(500);
    expect(policy.waitMs({ silentMs: 0 })).toBe(500);
    expect(policy.waitMs({ silentMs: 200 })).toBe(300);
  });

  it('ends the turn at once when the VAD reported the pause after more silence than endpointing_ms', () => {
    expect(new SilenceEndOfTurn(500).waitMs({ silentMs: 550 })).toBeLessThan(1);
  });
});
