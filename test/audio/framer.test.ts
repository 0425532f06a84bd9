import { describe, expect, it } from 'vitest';
import { AudioError } from '../../src/audio/errors.ts';
import { Framer } from '../../src/audio/framer.ts';

const ramp = (n: number, from = 0) => Int16Array.from({ length: n }, (_, i) => from + i);

describe('framer', () => {
  it('defaults to 20 ms at 16 kHz (320 samples) and 160 samples at 8 kHz', () => {
    expect(new Framer().frameSamples).toBe(320);
    expect(Framer.forRate(8000).frameSamples).toBe(160);
  });

  it('turns chunks of any size into exact frames that keep sample order', () => {
    const framer = new Framer(160);
    const input = ramp(1000);
    const frames: Int16Array[] = [];
    for (const [start, end] of [
      [0, 7],
      [7, 300],
      [300, 301],
      [301, 1000],
    ] as const)
      frames.push(...framer.push(input.subarray(start, end)));
    expect(frames.map((f) => f.length)).toEqual([160, 160, 160, 160, 160, 160]);
    expect(Array.from(frames.flatMap((f) => Array.from(f)))).toEqual(Array.from(input.subarray(0, 960)));
    expect(framer.buffered).toBe(40);
  });

  it('pads the last partial frame with silence on flush, and returns null when nothing is held', () => {
    const framer = new Framer(4);
    framer.push(Int16Array.of(1, 2, 3, 4, 5));
    expect(Array.from(framer.flush()!)).toEqual([5, 0, 0, 0]);
    expect(framer.flush()).toBeNull();
  });

  it('hands out frames the caller owns (later pushes do not change them)', () => {
    const framer = new Framer(2);
    framer.push(Int16Array.of(1));
    const [first] = framer.push(Int16Array.of(2));
    framer.push(Int16Array.of(9, 9, 9));
    expect(Array.from(first!)).toEqual([1, 2]);
  });

  it('rejects a frame length that is not a whole number of samples with AUDIO_BAD_FRAME_SIZE', () => {
    expect(() => Framer.forRate(22050, 10)).toThrow(
      expect.objectContaining({ code: 'AUDIO_BAD_FRAME_SIZE' }) as AudioError,
    );
  });
});
