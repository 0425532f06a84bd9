import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BeepDetector, type Beep } from '../../src/audio/beep.ts';
import { dtmfTones } from '../../src/audio/dtmf.ts';
import { muLawDecode, muLawEncode } from '../../src/audio/g711.ts';
import { concatPcm } from '../../src/audio/pcm.ts';
import { decodeWav } from '../../src/audio/wav.ts';
import { tone } from './signals.ts';

const FIXTURES = join(import.meta.dirname, '../../media/fixtures');

/** Beeps found in `pcm`, fed in 20 ms frames on a clock that starts at 0. */
function beeps(pcm: Int16Array, rate: number): Beep[] {
  const detector = new BeepDetector(rate);
  const frame = rate / 50;
  const found: Beep[] = [];
  const padded = concatPcm([pcm, new Int16Array(frame * 2)]);
  for (let i = 0; i + frame <= padded.length; i += frame) {
    const beep = detector.push(padded.subarray(i, i + frame), (i / rate) * 1000);
    if (beep) found.push(beep);
  }
  return found;
}

const silence = (rate: number, seconds: number) => new Int16Array(Math.round(rate * seconds));

describe('BeepDetector', () => {
  it('finds a steady 0.25-1.5 s tone between 300 Hz and 2.5 kHz, with its start, end and frequency, at 8 and 16 kHz and through μ-law', () => {
    for (const rate of [8000, 16000]) {
      for (const hz of [440, 1000, 1400, 2000]) {
        const pcm = concatPcm([silence(rate, 0.5), tone(hz, rate, 0.5, 8000), silence(rate, 0.3)]);
        for (const audio of [pcm, muLawDecode(muLawEncode(pcm))]) {
          const [beep, ...more] = beeps(audio, rate);
          expect(more, `${hz} Hz at ${rate}`).toEqual([]);
          expect(Math.abs(beep!.startMs - 500), `${hz} Hz start`).toBeLessThanOrEqual(20);
          expect(Math.abs(beep!.endMs - 1000), `${hz} Hz end`).toBeLessThanOrEqual(20);
          expect(Math.abs(beep!.hz - hz)).toBeLessThanOrEqual(rate / 256);
        }
      }
    }
  });

  it('takes neither a blip (100 ms) nor a held tone (3 s) nor a tone too low (150 Hz) for a beep', () => {
    expect(beeps(tone(1000, 8000, 0.1, 8000), 8000)).toEqual([]);
    expect(beeps(tone(1000, 8000, 3, 8000), 8000)).toEqual([]);
    expect(beeps(tone(150, 8000, 0.5, 8000), 8000)).toEqual([]);
  });

  it('hears no beep in keypad tones, in any recorded speech fixture, or in noise', () => {
    expect(beeps(dtmfTones('1234567890*#', 8000, { toneMs: 400, gapMs: 100 }), 8000)).toEqual([]);
    for (const file of readdirSync(FIXTURES).filter((f) => f.endsWith('.wav'))) {
      const pcm = decodeWav(readFileSync(join(FIXTURES, file)));
      expect(beeps(pcm.samples, pcm.sampleRate), file).toEqual([]);
    }
    let seed = 3;
    const noise = new Int16Array(8000).map(() => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return Math.round((seed / 2 ** 31 - 0.5) * 6000);
    });
    expect(beeps(noise, 8000)).toEqual([]);
  });
});
