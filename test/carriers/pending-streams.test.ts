import { describe, expect, it } from 'vitest';
import { StartQueue } from '../../src/carriers/pending-streams.ts';

describe('StartQueue', () => {
  it('takes nothing before a start, holds messages while the start is checked, then hands them over in order and passes later ones straight on', () => {
    const queue = new StartQueue<string>();
    expect(queue.take('connected')).toBe(false);
    queue.checking();
    expect(queue.take('a')).toBe(true);
    expect(queue.take('b')).toBe(true);
    const got: string[] = [];
    queue.open((m) => got.push(m));
    expect(got).toEqual(['a', 'b']);
    expect(queue.take('c')).toBe(true);
    expect(got).toEqual(['a', 'b', 'c']);
  });

  it('keeps what waited when the start is checked twice', () => {
    const queue = new StartQueue<number>();
    queue.checking();
    queue.take(1);
    queue.checking();
    const got: number[] = [];
    queue.open((m) => got.push(m));
    expect(got).toEqual([1]);
  });
});
