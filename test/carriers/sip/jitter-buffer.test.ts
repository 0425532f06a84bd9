import { describe, expect, it } from 'vitest';
import { JitterBuffer } from '../../../src/carriers/sip/jitter-buffer.ts';
import { ManualTimers } from '../../../src/timers.ts';

/** A 4-sample frame whose samples all hold `value`, so the output order can be read back. */
const frame = (value: number) => new Int16Array(4).fill(value);

function harness(options: { maxDepth?: number; maxWaitMs?: number; maxConcealed?: number } = {}) {
  const timers = new ManualTimers();
  const out: { value: number; concealed: boolean }[] = [];
  const buffer = new JitterBuffer((f, concealed) => out.push({ value: f[0]!, concealed }), {
    timers,
    frameSamples: 4,
    ...options,
  });
  return { timers, out, buffer, values: () => out.map((o) => (o.concealed ? `~${o.value}` : o.value)) };
}

describe('jitter buffer', () => {
  it('passes packets that arrive in order straight through, with no timer and nothing held', () => {
    const { buffer, values, timers } = harness();
    for (let s = 10; s < 15; s++) buffer.push(s, frame(s * 100));
    expect(values()).toEqual([1000, 1100, 1200, 1300, 1400]);
    expect(buffer.depth).toBe(0);
    expect(timers.pendingCount).toBe(0);
  });

  it('puts reordered packets back in sequence order', () => {
    const { buffer, values } = harness();
    for (const s of [1, 3, 2, 5, 4, 6]) buffer.push(s, frame(s * 100));
    expect(values()).toEqual([100, 200, 300, 400, 500, 600]);
  });

  it('keeps the order across the 16-bit sequence wrap', () => {
    const { buffer, values } = harness();
    for (const s of [65534, 0, 65535, 1]) buffer.push(s, frame(s === 65534 ? 1 : s === 65535 ? 2 : s + 3));
    expect(values()).toEqual([1, 2, 3, 4]);
  });

  it('drops duplicates and packets that come after their place was played', () => {
    const { buffer, values } = harness();
    for (const s of [1, 3, 3, 2, 2, 1]) buffer.push(s, frame(s * 100));
    expect(values()).toEqual([100, 200, 300]);
    expect(buffer.stats.duplicate).toBe(1);
    expect(buffer.stats.late).toBe(2);
  });

  it('conceals a lost packet with the last frame at half, then a quarter, then silence', () => {
    const { buffer, values, timers } = harness({ maxWaitMs: 60 });
    buffer.push(1, frame(800));
    buffer.push(5, frame(500));
    expect(values()).toEqual([800]);
    timers.advance(59);
    expect(values()).toEqual([800]);
    timers.advance(1);
    expect(values()).toEqual([800, '~400', '~200', '~0', 500]);
    expect(buffer.stats.concealed).toBe(3);
  });

  it('gives a gap up as soon as more packets than its depth wait behind it, without waiting for the timer', () => {
    const { buffer, values } = harness({ maxDepth: 2 });
    buffer.push(1, frame(100));
    buffer.push(3, frame(300));
    buffer.push(4, frame(400));
    expect(values()).toEqual([100]);
    buffer.push(5, frame(500));
    expect(values()).toEqual([100, '~50', 300, 400, 500]);
    expect(buffer.depth).toBe(0);
  });

  it('never holds more packets than its depth, whatever arrives', () => {
    const { buffer } = harness({ maxDepth: 3 });
    buffer.push(0, frame(1));
    for (let s = 2; s < 60; s += 2) {
      buffer.push(s, frame(1));
      expect(buffer.depth).toBeLessThanOrEqual(3);
    }
  });

  it('conceals at most maxConcealed frames for one long loss', () => {
    const { buffer, values, timers } = harness({ maxConcealed: 2 });
    buffer.push(1, frame(100));
    buffer.push(40, frame(4000));
    timers.advance(100);
    expect(values()).toEqual([100, '~50', '~25', 4000]);
  });

  it('counts a packet without audio (a telephone event) as present: nothing is concealed for it', () => {
    const { buffer, values, timers } = harness();
    buffer.push(1, frame(100));
    buffer.push(2, null);
    buffer.push(3, null);
    buffer.push(4, frame(400));
    timers.advance(1000);
    expect(values()).toEqual([100, 400]);
    expect(buffer.stats.concealed).toBe(0);
  });

  it('starts over at a jump of more than 100 sequence numbers, without filling the jump', () => {
    const { buffer, values } = harness();
    buffer.push(1, frame(100));
    buffer.push(30000, frame(200));
    buffer.push(30001, frame(300));
    expect(values()).toEqual([100, 200, 300]);
    expect(buffer.stats.restarts).toBe(1);
  });

  it('takes any numbering after restart() (a new source)', () => {
    const { buffer, values } = harness();
    buffer.push(10, frame(100));
    buffer.push(12, frame(300));
    buffer.restart();
    buffer.push(5, frame(500));
    buffer.push(6, frame(600));
    expect(values()).toEqual([100, '~50', 300, 500, 600]);
  });

  it('stops its timer on close', () => {
    const { buffer, timers } = harness();
    buffer.push(1, frame(1));
    buffer.push(3, frame(3));
    expect(timers.pendingCount).toBe(1);
    buffer.close();
    expect(timers.pendingCount).toBe(0);
  });
});
