import { describe, expect, it } from 'vitest';
import { SpeechSegmenter } from '../../../src/speech/vad/segmenter.ts';
import type { VadEvent } from '../../../src/speech/types.ts';

// 100 windows per second keep the arithmetic readable: window i starts at i × 10 ms.
const settings = { sampleRate: 1000, threshold: 0.5, negativeThreshold: 0.35, minSpeechMs: 30, minSilenceMs: 50 };

function run(probabilities: number[], overrides: Partial<typeof settings> = {}): VadEvent[] {
  const segmenter = new SpeechSegmenter({ ...settings, ...overrides });
  const events: VadEvent[] = [];
  probabilities.forEach((p, i) => segmenter.push(p, i * 10, 10, events));
  return events;
}

describe('speech segmenter', () => {
  it('starts speech once it lasted minSpeechMs, timed at its first window', () => {
    expect(run([0, 0, 0.9, 0.9, 0.9, 0.9])).toEqual([{ type: 'speech_start', at: 0.02 }]);
  });

  it('ignores a burst shorter than minSpeechMs', () => {
    expect(run([0, 0.9, 0.9, 0, 0, 0])).toEqual([]);
  });

  it('keeps a candidate through dips between the thresholds (hysteresis) but not below the negative one', () => {
    expect(run([0.9, 0.4, 0.9, 0])).toEqual([{ type: 'speech_start', at: 0 }]);
    expect(run([0.9, 0.2, 0.9, 0])).toEqual([]);
  });

  it('ends speech after minSilenceMs below the negative threshold, timed at the first silent window', () => {
    expect(run([0.9, 0.9, 0.9, 0.1, 0.1, 0.1, 0.1, 0.1])).toEqual([
      { type: 'speech_start', at: 0 },
      { type: 'speech_end', at: 0.03 },
    ]);
  });

  it('does not end speech on a pause shorter than minSilenceMs, nor on values between the thresholds', () => {
    expect(run([0.9, 0.9, 0.9, 0.1, 0.1, 0.9, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4])).toEqual([
      { type: 'speech_start', at: 0 },
    ]);
  });

  it('reports every turn of speech in order', () => {
    const turn = [0.9, 0.9, 0.9, 0, 0, 0, 0, 0];
    expect(run([...turn, ...turn]).map((e) => `${e.type}@${e.at}`)).toEqual([
      'speech_start@0',
      'speech_end@0.03',
      'speech_start@0.08',
      'speech_end@0.11',
    ]);
  });
});
