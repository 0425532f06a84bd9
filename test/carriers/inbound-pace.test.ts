import { describe, expect, it } from 'vitest';
import { INBOUND_PACE_DEFAULTS, InboundPace } from '../../src/carriers/inbound-pace.ts';

const FRAME = 160; // 20 ms at 8 kHz

function clocked() {
  let now = 1000;
  const pace = new InboundPace(8000, () => now);
  return { pace, advance: (ms: number) => (now += ms) };
}

describe('caller audio held to the clock', () => {
  it('accepts a stream that keeps to real time', () => {
    const { pace, advance } = clocked();
    for (let i = 0; i < 500; i++) {
      expect(pace.admit(FRAME)).toBe('accept');
      advance(20);
    }
  });

  it('accepts a burst after a network stall, and up to two seconds ahead of the clock', () => {
    const { pace, advance } = clocked();
    pace.admit(FRAME);
    advance(3000); // nothing arrived for 3 s, then it all comes at once
    // 3 s late plus 2 s ahead, less the first frame.
    for (let i = 0; i < 249; i++) expect(pace.admit(FRAME)).toBe('accept');
    expect(pace.admit(FRAME)).toBe('drop');
  });

  it('drops what runs further ahead, and closes a stream that keeps pushing', () => {
    const { pace } = clocked();
    const verdicts: string[] = [];
    for (let i = 0; i < 3000; i++) verdicts.push(pace.admit(FRAME));
    const accepted = verdicts.filter((v) => v === 'accept').length;
    expect(accepted * 20).toBeLessThanOrEqual(INBOUND_PACE_DEFAULTS.aheadMs);
    expect(accepted * 20).toBeGreaterThan(INBOUND_PACE_DEFAULTS.aheadMs - 40);
    const firstClose = verdicts.indexOf('close');
    expect((firstClose - accepted) * 20).toBeGreaterThan(INBOUND_PACE_DEFAULTS.closeAfterDroppedMs - 40);
    expect(verdicts.slice(accepted, firstClose).every((v) => v === 'drop')).toBe(true);
  });
});
