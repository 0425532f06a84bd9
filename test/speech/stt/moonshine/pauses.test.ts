import { describe, expect, it } from 'vitest';
import { concatPcm } from '../../../../src/audio/pcm.ts';
import { shortenPauses } from '../../../../src/speech/stt/moonshine/pauses.ts';

const RATE = 8000;
/** `ms` of a level: a tone at `amplitude` (0: silence). */
const stretch = (ms: number, amplitude: number) =>
  Int16Array.from({ length: (ms * RATE) / 1000 }, (_, i) => Math.round(amplitude * Math.sin(i / 3)));

describe('shortenPauses', () => {
  it('shortens a quiet stretch inside the speech to keepMs, half kept from each end, and keeps the speech whole', () => {
    const words = stretch(400, 8000);
    const after = stretch(400, 6000);
    const out = shortenPauses(concatPcm([words, stretch(1200, 0), after]), RATE, 300);
    expect(out.length).toBe(words.length + (300 * RATE) / 1000 + after.length);
    expect(out.subarray(0, words.length)).toEqual(words);
    expect(out.subarray(out.length - after.length)).toEqual(after);
  });

  it('keeps the quiet before the first speech and after the last whole: the model punctuates from it', () => {
    const audio = concatPcm([stretch(600, 0), stretch(400, 8000), stretch(900, 0)]);
    expect(shortenPauses(audio, RATE, 300)).toBe(audio);
  });

  it('leaves pauses no longer than keepMs, and noise the quiet floor does not call quiet, as they are', () => {
    const short = concatPcm([stretch(400, 8000), stretch(300, 0), stretch(400, 8000)]);
    expect(shortenPauses(short, RATE, 300)).toBe(short);
    // A line whose "pause" is noise 14 dB under the words: not quiet, so nothing is cut out of it.
    const noisy = concatPcm([stretch(400, 8000), stretch(1200, 1600), stretch(400, 8000)]);
    expect(shortenPauses(noisy, RATE, 300)).toBe(noisy);
  });

  it('shortens every long pause, and the line-noise floor counts as quiet', () => {
    const word = stretch(200, 8000);
    const hum = stretch(1000, 60); // under the floor (RMS 100)
    const out = shortenPauses(concatPcm([word, hum, word, stretch(800, 0), word]), RATE, 300);
    expect(out.length).toBe(3 * word.length + 2 * ((300 * RATE) / 1000));
  });
});
