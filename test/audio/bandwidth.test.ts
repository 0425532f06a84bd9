import { describe, expect, it } from 'vitest';
import { BandwidthProbe } from '../../src/audio/bandwidth.ts';
import { AudioError } from '../../src/audio/errors.ts';
import { resample } from '../../src/audio/resampler.ts';
import { readWavFile } from '../../src/audio/wav.ts';
import { fixtures } from '../support/test-sets.ts';
import { tone } from './signals.ts';

/** Deterministic white noise (a wideband "voice"): every band holds its share. */
function noise(seconds: number, sampleRate: number, amplitude = 3000): Int16Array {
  const out = new Int16Array(Math.round(seconds * sampleRate));
  let seed = 12345;
  for (let i = 0; i < out.length; i++) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    out[i] = Math.round((seed / 2 ** 31 - 0.5) * 2 * amplitude);
  }
  return out;
}

const judge = (samples: Int16Array) => new BandwidthProbe({ sampleRate: 16000 }).push(samples);

describe('BandwidthProbe', () => {
  it('white noise at 16 kHz is wideband; the same noise through an 8 kHz line is narrowband', () => {
    const wide = noise(1, 16000);
    expect(judge(wide)).toBe('wide');
    expect(judge(resample(resample(wide, 16000, 8000), 8000, 16000))).toBe('narrow');
  });

  it('a tone just below the old Nyquist (3.5 kHz) is narrowband, one above it (5.5 kHz) wideband', () => {
    expect(judge(tone(3500, 16000, 0.5))).toBe('narrow');
    expect(judge(tone(5500, 16000, 0.5))).toBe('wide');
  });

  it('every wideband fixture voice is judged wideband and each of them upsampled from the 8 kHz μ-law file narrowband, within its first 300 ms of speech', async () => {
    for (const f of fixtures()) {
      const { samples, sampleRate } = await readWavFile(f.path);
      const pcm16 = sampleRate === 16000 ? samples : resample(samples, sampleRate, 16000);
      // kal is flite's 8 kHz diphone voice: narrowband even in its 16 kHz file.
      const expected = f.encoding === 'mulaw' || f.voice === 'kal' ? 'narrow' : 'wide';
      const probe = new BandwidthProbe({ sampleRate: 16000 });
      expect(probe.push(pcm16), `${f.file}: ${probe.highBandDb.toFixed(1)} dB`).toBe(expected);
    }
  });

  it('silence and quiet hiss are not speech: no verdict however long', () => {
    const probe = new BandwidthProbe({ sampleRate: 16000 });
    expect(probe.push(new Int16Array(16000 * 3))).toBeNull();
    expect(probe.push(noise(3, 16000, 50))).toBeNull();
    expect(probe.speechMs).toBe(0);
    expect(probe.settle()).toBeNull();
  });

  it('settle() judges early on at least 100 ms of speech, and not on less', () => {
    const short = new BandwidthProbe({ sampleRate: 16000 });
    short.push(noise(0.05, 16000));
    expect(short.settle()).toBeNull();
    const enough = new BandwidthProbe({ sampleRate: 16000 });
    expect(enough.push(noise(0.15, 16000))).toBeNull();
    expect(enough.settle()).toBe('wide');
  });

  it('works at rates whose 10 ms frame is not a whole number of samples (22.05 kHz)', () => {
    expect(new BandwidthProbe({ sampleRate: 22050 }).push(noise(0.5, 22050))).toBe('wide');
    expect(new BandwidthProbe({ sampleRate: 22050 }).push(resample(noise(0.5, 8000), 8000, 22050))).toBe('narrow');
  });

  it('the verdict does not depend on how the audio is chunked', () => {
    const audio = noise(0.5, 16000);
    const whole = new BandwidthProbe({ sampleRate: 16000, speechMs: 10_000 });
    whole.push(audio);
    const chunked = new BandwidthProbe({ sampleRate: 16000, speechMs: 10_000 });
    for (let i = 0; i < audio.length; i += 333) chunked.push(audio.subarray(i, i + 333));
    expect(chunked.highBandDb).toBeCloseTo(whole.highBandDb, 9);
  });

  it('refuses a band edge above the Nyquist rate and an even number of taps with AUDIO_BAD_ARGUMENT', () => {
    for (const make of [
      () => new BandwidthProbe({ sampleRate: 8000 }),
      () => new BandwidthProbe({ sampleRate: 16000, taps: 64 }),
    ]) {
      try {
        make();
        expect.unreachable();
      } catch (error) {
        expect(error instanceof AudioError && error.code).toBe('AUDIO_BAD_ARGUMENT');
      }
    }
  });
});
