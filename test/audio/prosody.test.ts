import { describe, expect, it } from 'vitest';
import { ProsodyAnalyser, SpeakerRange, unOctaved } from '../../src/audio/prosody.ts';

const RATE = 8000;

interface Syllable {
  ms: number;
  /** Pitch at the syllable's start and end, Hz (a straight glide between). */
  fromHz: number;
  toHz: number;
  /** Amplitude at the start and end. */
  from?: number;
  to?: number;
}

/** A voiced sound of five harmonics per syllable, 60 ms of silence between syllables, then `quietMs` of silence. */
function voice(syllables: Syllable[], quietMs = 60): Int16Array {
  const gap = (RATE * 60) / 1000;
  const total = syllables.reduce((n, s) => n + (RATE * s.ms) / 1000 + gap, 0) + (RATE * quietMs) / 1000;
  const out = new Int16Array(total);
  let at = 0;
  for (const s of syllables) {
    const n = (RATE * s.ms) / 1000;
    let phase = 0;
    for (let i = 0; i < n; i++) {
      const t = i / n;
      phase += (2 * Math.PI * (s.fromHz + (s.toHz - s.fromHz) * t)) / RATE;
      const amplitude = (s.from ?? 6000) + ((s.to ?? 6000) - (s.from ?? 6000)) * t;
      let v = 0;
      for (let h = 1; h <= 5; h++) v += Math.sin(h * phase) / h;
      out[at + i] = Math.round(amplitude * v * 0.6);
    }
    at += n + gap;
  }
  return out;
}

const level = (hz: number, ms = 200): Syllable => ({ ms, fromHz: hz, toHz: hz });
const analyser = new ProsodyAnalyser(RATE);

describe('ProsodyAnalyser', () => {
  it('reads a pitch that falls at the end as a negative final slope', () => {
    const ending = analyser.ending(voice([level(180), level(180), { ms: 300, fromHz: 180, toHz: 110 }]));
    expect(ending.finalSlope).toBeLessThan(-20);
  });

  it('reads a pitch that rises at the end as a positive final slope', () => {
    const ending = analyser.ending(voice([level(150), level(150), { ms: 300, fromHz: 150, toHz: 240 }]));
    expect(ending.finalSlope).toBeGreaterThan(20);
  });

  it('reads a level pitch as a slope near zero, ending where the voice has been', () => {
    const ending = analyser.ending(voice([level(150), level(150), level(150)]));
    expect(Math.abs(ending.finalSlope!)).toBeLessThan(3);
    expect(Math.abs(ending.finalLevel!)).toBeLessThan(1);
  });

  it("measures the final pitch from the speaker's low end when it is known", () => {
    // 200 Hz is 12 semitones over a speaker whose floor is 100 Hz (0 semitones re 100 Hz).
    const ending = analyser.ending(voice([level(200), level(200), level(200)]), 0);
    expect(ending.finalLevel).toBeCloseTo(12, 0);
  });

  it('reads a last syllable twice as long as the others as lengthened', () => {
    const ending = analyser.ending(voice([level(150), level(150), level(150), level(150, 400)]));
    expect(ending.lengthening).toBeGreaterThan(1.7);
    expect(ending.lengthening).toBeLessThan(2.3);
  });

  it('reads a voice whose last syllable dies away as fading', () => {
    const fading = analyser.ending(voice([level(150), level(150), { ...level(150, 300), from: 8000, to: 400 }]));
    const steady = analyser.ending(voice([level(150), level(150), level(150, 300)]));
    // Both end at the cut into silence; only the fading one loses its loudness before that.
    expect(fading.fade!).toBeLessThan(steady.fade! - 20);
  });

  it('gives no pitch cues for silence or a noise without a pitch', () => {
    expect(analyser.ending(new Int16Array(RATE))).toMatchObject({ finalSlope: null, finalLevel: null, speechMs: 0 });
    let seed = 7;
    const noise = Int16Array.from({ length: RATE }, () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return (seed / 2 ** 31 - 0.5) * 8000;
    });
    expect(analyser.ending(noise).finalSlope).toBeNull();
  });
});

describe('unOctaved', () => {
  it('folds a window the tracker put an octave off its neighbours back into the voice, and leaves real movement', () => {
    expect(unOctaved([5, 5, 17, 5, 5])).toEqual([5, 5, 5, 5, 5]);
    expect(unOctaved([5, 5, -7.5, 5, 5])).toEqual([5, 5, 4.5, 5, 5]);
    expect(unOctaved([5, 4, 3, 2, 1, 0])).toEqual([5, 4, 3, 2, 1, 0]);
  });
});

describe('SpeakerRange', () => {
  it("learns the speaker's low end from the pitch heard so far, and knows nothing before enough of it", () => {
    const range = new SpeakerRange();
    range.add([0, 1]);
    expect(range.floor()).toBeNull();
    range.add(Array.from({ length: 100 }, (_, i) => i / 10));
    expect(range.floor()).toBeGreaterThan(0.5);
    expect(range.floor()).toBeLessThan(1.5);
  });

  it('keeps only the most recent pitches', () => {
    const range = new SpeakerRange(50);
    range.add(Array.from({ length: 100 }, () => 0));
    range.add(Array.from({ length: 50 }, () => 5));
    expect(range.floor()).toBe(5);
  });
});
