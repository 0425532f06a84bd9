import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DtmfDetector, dtmfFrequencies, dtmfTones } from '../../src/audio/dtmf.ts';
import { muLawDecode, muLawEncode } from '../../src/audio/g711.ts';
import { concatPcm } from '../../src/audio/pcm.ts';
import { decodeWav } from '../../src/audio/wav.ts';

const ALL_KEYS = '0123456789*#ABCD';
const FIXTURES = join(import.meta.dirname, '../../media/fixtures');

/** Keys heard in `pcm`, fed in 20 ms frames as a line delivers it. */
function hear(pcm: Int16Array, rate: number, chunk = rate / 50): string {
  const detector = new DtmfDetector(rate);
  let keys = '';
  for (let i = 0; i < pcm.length; i += chunk) keys += detector.push(pcm.subarray(i, i + chunk)).join('');
  return keys;
}

describe('dtmf', () => {
  it('uses the ITU-T Q.23 row and column frequencies', () => {
    expect(dtmfFrequencies('1')).toEqual([697, 1209]);
    expect(dtmfFrequencies('5')).toEqual([770, 1336]);
    expect(dtmfFrequencies('9')).toEqual([852, 1477]);
    expect(dtmfFrequencies('#')).toEqual([941, 1477]);
    expect(dtmfFrequencies('D')).toEqual([941, 1633]);
    expect(dtmfFrequencies('x')).toBeNull();
  });

  it('makes 100 ms tones with 100 ms gaps that never clip', () => {
    const pcm = dtmfTones('12', 8000);
    expect(pcm.length).toBe(2 * 1600);
    const peak = pcm.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
    expect(peak).toBeGreaterThan(15_000);
    expect(peak).toBeLessThan(32_767 * 0.7);
    expect(pcm.subarray(800, 1600).every((x) => x === 0)).toBe(true);
  });

  it('hears every key, in order and once each, at 8 and 16 kHz, through a μ-law line, in frames of any size', () => {
    for (const rate of [8000, 16000]) {
      const tones = dtmfTones(ALL_KEYS, rate);
      expect(hear(tones, rate)).toBe(ALL_KEYS);
      expect(hear(muLawDecode(muLawEncode(tones)), rate)).toBe(ALL_KEYS);
      expect(hear(tones, rate, 97)).toBe(ALL_KEYS);
    }
  });

  it('hears a key repeated after a gap twice, and the shortest tone Q.24 accepts (40 ms) once', () => {
    expect(hear(dtmfTones('11', 8000), 8000)).toBe('11');
    const shortTones = dtmfTones('7', 8000, { toneMs: 50, gapMs: 50 });
    expect(hear(concatPcm([new Int16Array(37), shortTones]), 8000)).toBe('7');
  });

  it('hears no key in any of the recorded speech fixtures, nor in silence', () => {
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.wav'));
    expect(files.length).toBeGreaterThan(40);
    for (const file of files) {
      const pcm = decodeWav(readFileSync(join(FIXTURES, file)));
      expect(hear(pcm.samples, pcm.sampleRate), file).toBe('');
    }
    expect(hear(new Int16Array(8000), 8000)).toBe('');
  });

  it('hears keys under speech-level noise (20 dB below the tones)', () => {
    const tones = dtmfTones('4#', 8000);
    let seed = 7;
    const noisy = tones.map((x) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return x + Math.round((seed / 2 ** 31 - 0.5) * 2 * 1000);
    });
    expect(hear(noisy, 8000)).toBe('4#');
  });
});
