import { describe, expect, it } from 'vitest';
import { AudioError } from '../../src/audio/errors.ts';
import { Resampler, resample } from '../../src/audio/resampler.ts';
import { amplitudeAt, db, rmsOf, tone, trim } from './signals.ts';

const rates = [8000, 16000, 22050, 24000, 44100, 48000] as const;
const pairs = rates.flatMap((from) => rates.filter((to) => to !== from).map((to) => [from, to] as const));

describe('resampler', () => {
  it.each(pairs)('passes a 1 kHz tone within 1 dB from %i to %i Hz', (from, to) => {
    const out = trim(resample(tone(1000, from, 0.5), from, to), to);
    expect(Math.abs(db(amplitudeAt(out, 1000, to) / 10000))).toBeLessThan(1);
  });

  it.each(pairs.filter(([from, to]) => to < from))(
    'attenuates a tone above the new Nyquist by at least 40 dB from %i to %i Hz',
    (from, to) => {
      // Above the new Nyquist and below the old one: without filtering it would alias into the band.
      const frequency = Math.min(0.575 * to, (to + from) / 4);
      const out = trim(resample(tone(frequency, from, 0.5), from, to), to);
      expect(db(rmsOf(out) / (10000 / Math.SQRT2))).toBeLessThan(-40);
    },
  );

  it.each(pairs.filter(([from, to]) => to > from))(
    'keeps the images of a near-Nyquist tone at least 40 dB down from %i to %i Hz',
    (from, to) => {
      const frequency = 0.4 * from;
      const out = trim(resample(tone(frequency, from, 0.5), from, to), to);
      expect(db(amplitudeAt(out, from - frequency, to) / 10000)).toBeLessThan(-40);
    },
  );

  it.each([
    [8000, 16000],
    [16000, 8000],
    [44100, 16000],
    [16000, 22050],
    [48000, 24000],
  ] as const)('gives the same samples chunked as one-shot from %i to %i Hz', (from, to) => {
    const input = tone(440, from, 0.3, 8000);
    for (let i = 0; i < input.length; i += 7) input[i] = (input[i]! + (i % 13) * 300) | 0;
    const whole = resample(input, from, to);
    const stream = new Resampler(from, to);
    const parts: number[] = [];
    const sizes = [1, 17, 160, 3, 320, 999, 2];
    for (let offset = 0, k = 0; offset < input.length; k++) {
      const size = sizes[k % sizes.length]!;
      parts.push(...stream.push(input.subarray(offset, offset + size)));
      offset += size;
    }
    parts.push(...stream.flush());
    expect(parts.length).toBe(whole.length);
    expect(parts).toEqual(Array.from(whole));
  });

  it('produces ceil(n · out/in) samples in total', () => {
    expect(resample(new Int16Array(441), 44100, 16000).length).toBe(160);
    expect(resample(new Int16Array(161), 8000, 16000).length).toBe(322);
    expect(resample(new Int16Array(3), 48000, 8000).length).toBe(1);
  });

  it('emits 20 ms of output per 20 ms of input once the filter is primed', () => {
    const stream = new Resampler(8000, 16000);
    stream.push(new Int16Array(160));
    expect(stream.push(new Int16Array(160)).length).toBe(320);
  });

  it('keeps a constant as the same constant', () => {
    const out = trim(resample(new Int16Array(4800).fill(1000), 48000, 16000), 16000);
    expect(Math.min(...out)).toBeGreaterThanOrEqual(999);
    expect(Math.max(...out)).toBeLessThanOrEqual(1001);
  });

  it('returns the input unchanged when the rates are equal', () => {
    const input = Int16Array.of(1, 2, 3);
    expect(new Resampler(16000, 16000).push(input)).toBe(input);
  });

  it('rejects a rate that is not a positive integer with AUDIO_UNSUPPORTED_RATE', () => {
    expect(() => new Resampler(0, 16000)).toThrow(AudioError);
    try {
      new Resampler(16000, 15999.5);
    } catch (error) {
      expect((error as AudioError).code).toBe('AUDIO_UNSUPPORTED_RATE');
    }
  });
});
