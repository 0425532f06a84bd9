import { describe, expect, it } from 'vitest';
import { PauseCutter } from '../../../src/speech/stt/pause-cutter.ts';

const FRAME = 320; // 20 ms at 16 kHz

/** Pushes `frames` frames at `level`; returns the indexes of the frames that ended a pause. */
function feed(cutter: PauseCutter, frames: number, level: number): number[] {
  const pauses: number[] = [];
  for (let i = 0; i < frames; i++) if (cutter.push(FRAME, level)) pauses.push(i);
  return pauses;
}

describe('pause cutter', () => {
  it('a pause is found once quiet reaches pauseMs after speech, and only once however long it lasts', () => {
    const cutter = new PauseCutter({ sampleRate: 16000, pauseMs: 300 });
    expect(feed(cutter, 40, 3000)).toEqual([]);
    // The 15th quiet frame completes 300 ms.
    expect(feed(cutter, 40, 50)).toEqual([14]);
    expect(cutter.quietMsNow).toBe(800);
    expect(cutter.speechMs).toBe(800);
  });

  it('gaps between words shorter than pauseMs are not pauses, and quiet before any speech is not one either', () => {
    const cutter = new PauseCutter({ sampleRate: 16000, pauseMs: 300 });
    expect(feed(cutter, 40, 50)).toEqual([]);
    for (let word = 0; word < 10; word++) {
      expect(feed(cutter, 20, 3000)).toEqual([]);
      expect(feed(cutter, 14, 50)).toEqual([]);
    }
    expect(cutter.speechMs).toBe(10 * 20 * 20);
    expect(cutter.quietMsNow).toBe(14 * 20);
  });

  it('speech since the last cut adds up across pauses until cut() starts a new piece', () => {
    const cutter = new PauseCutter({ sampleRate: 16000, pauseMs: 300 });
    feed(cutter, 50, 3000);
    expect(feed(cutter, 15, 50)).toEqual([14]);
    feed(cutter, 50, 3000);
    expect(feed(cutter, 15, 50)).toEqual([14]);
    expect(cutter.speechSinceCut).toBe(2000);
    cutter.cut();
    expect(cutter.speechSinceCut).toBe(0);
    feed(cutter, 10, 3000);
    expect(cutter.speechSinceCut).toBe(200);
  });

  it('quiet is relative to the loudest speech heard: line noise 20 dB under the voice is a pause', () => {
    const cutter = new PauseCutter({ sampleRate: 16000, pauseMs: 300, quietRatio: 10, quietFloor: 100 });
    feed(cutter, 40, 8000);
    // 700 is above the absolute floor but under a tenth of 8000.
    expect(feed(cutter, 15, 700)).toEqual([14]);
    // After reset (a new utterance) the same level is speech again.
    cutter.reset();
    feed(cutter, 40, 700);
    expect(cutter.speechSinceCut).toBe(800);
  });

  it('chunk length sets the time: 8 kHz frames of 160 samples count 20 ms each', () => {
    const cutter = new PauseCutter({ sampleRate: 8000, pauseMs: 300 });
    for (let i = 0; i < 30; i++) cutter.push(160, 3000);
    const pauses = [];
    for (let i = 0; i < 20; i++) if (cutter.push(160, 10)) pauses.push(i);
    expect(pauses).toEqual([14]);
  });
});
