import { describe, expect, it } from 'vitest';
import { UtteranceBuffer } from '../../../src/speech/stt/utterance-buffer.ts';

describe('utterance buffer', () => {
  it('keeps copies of the pushed frames: a caller reusing its frame does not change the utterance', () => {
    const buffer = new UtteranceBuffer(100);
    const frame = Int16Array.of(1, 2, 3);
    buffer.push(frame);
    frame.fill(9);
    buffer.push(frame);
    expect([...buffer.take()]).toEqual([1, 2, 3, 9, 9, 9]);
    expect(buffer.take().length).toBe(0);
  });

  it('over its cap it drops the oldest frames and says how many samples went', () => {
    const buffer = new UtteranceBuffer(5);
    expect(buffer.push(Int16Array.of(1, 2, 3))).toBe(0);
    expect(buffer.push(Int16Array.of(4, 5, 6))).toBe(3);
    expect([...buffer.take()]).toEqual([4, 5, 6]);
  });

  it('peek gives the utterance so far and keeps it for take', () => {
    const buffer = new UtteranceBuffer(100);
    buffer.push(Int16Array.of(1, 2));
    expect([...buffer.peek()]).toEqual([1, 2]);
    buffer.push(Int16Array.of(3));
    expect([...buffer.take()]).toEqual([1, 2, 3]);
  });

  it('clear drops the utterance and answers how many samples it held', () => {
    const buffer = new UtteranceBuffer(100);
    buffer.push(new Int16Array(7));
    expect(buffer.clear()).toBe(7);
    expect(buffer.clear()).toBe(0);
  });
});
