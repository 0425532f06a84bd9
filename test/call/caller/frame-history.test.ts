import { describe, expect, it } from 'vitest';
import { FrameHistory } from '../../../src/call/caller/frame-history.ts';

const frame = (value: number, length = 4) => new Int16Array(length).fill(value);

describe('FrameHistory', () => {
  it('hands over, oldest first, only the frames that end after the given time', () => {
    const history = new FrameHistory(10, 4);
    for (let i = 1; i <= 5; i++) history.push(frame(i), i * 0.02);
    const taken: number[] = [];
    history.drain(0.06, (f) => taken.push(f[0]!));
    expect(taken).toEqual([4, 5]);
  });

  it('keeps only the last `size` frames', () => {
    const history = new FrameHistory(3, 4);
    for (let i = 1; i <= 5; i++) history.push(frame(i), i * 0.02);
    const taken: number[] = [];
    history.drain(0, (f) => taken.push(f[0]!));
    expect(taken).toEqual([3, 4, 5]);
  });

  it('copies frames into its ring, so a frame reused by the transport does not change what it hands over', () => {
    const history = new FrameHistory(3, 4);
    const shared = frame(7);
    history.push(shared, 0.02);
    shared.fill(0);
    const taken: Int16Array[] = [];
    history.drain(0, (f) => taken.push(f));
    expect([...taken[0]!]).toEqual([7, 7, 7, 7]);
  });

  it('keeps a frame of another length whole, and forgets everything once drained', () => {
    const history = new FrameHistory(3, 4);
    history.push(frame(1, 6), 0.02);
    const first: Int16Array[] = [];
    history.drain(0, (f) => first.push(f));
    expect(first.map((f) => f.length)).toEqual([6]);
    const second: Int16Array[] = [];
    history.drain(0, (f) => second.push(f));
    expect(second).toEqual([]);
  });
});
