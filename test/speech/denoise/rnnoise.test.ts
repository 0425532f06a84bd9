// RNNoise on a call's audio: same length out, a fixed delay, steady noise lowered, speech kept.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { concatPcm, rms } from '../../../src/audio/pcm.ts';
import { decodeWav } from '../../../src/audio/wav.ts';
import { openRnnoise } from '../../../src/speech/denoise/rnnoise.ts';

const fixtures = join(import.meta.dirname, '..', '..', '..', 'media', 'fixtures');

/** Stationary pink-ish noise from a fixed seed (a fan). */
function fan(samples: number, amplitude = 2000): Int16Array {
  let seed = 7;
  let b0 = 0;
  let b1 = 0;
  const out = new Int16Array(samples);
  for (let i = 0; i < samples; i++) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    const w = (seed / 2147483648) * 2 - 1;
    b0 = 0.99765 * b0 + w * 0.099046;
    b1 = 0.963 * b1 + w * 0.2965164;
    out[i] = Math.round((b0 + b1 + w * 0.3) * amplitude);
  }
  return out;
}

async function run(rate: number, input: Int16Array): Promise<Int16Array> {
  const denoiser = await openRnnoise(rate);
  const frame = rate / 50;
  const out: Int16Array[] = [];
  for (let i = 0; i + frame <= input.length; i += frame) {
    const piece = denoiser.process(input.slice(i, i + frame));
    expect(piece.length).toBe(frame);
    out.push(piece);
  }
  denoiser.close();
  return concatPcm(out);
}

const db = (ratio: number) => 20 * Math.log10(ratio);

describe('RNNoise denoiser', () => {
  it.each([8000, 16000])(
    'at %i Hz gives back every frame’s length, a fixed delay of under 30 ms behind',
    async (rate) => {
      const input = new Int16Array(rate * 2);
      const speech = decodeWav(readFileSync(join(fixtures, '01-my-name-is-john-rms.16k.wav')), rate).samples;
      input.set(speech.subarray(0, input.length));
      const output = await run(rate, input);
      expect(output.length).toBe(input.length);
      // The delay: the lag at which the output best matches the input's envelope.
      let best = 0;
      let bestScore = -Infinity;
      for (let lag = 0; lag < rate * 0.03; lag++) {
        let score = 0;
        for (let i = rate * 0.2; i < input.length - lag; i += 4)
          score += Math.abs(input[i]!) * Math.abs(output[i + lag]!);
        if (score > bestScore) {
          bestScore = score;
          best = lag;
        }
      }
      expect(best).toBeGreaterThan(0);
      expect(best / rate).toBeLessThan(0.03);
    },
  );

  it('lowers a fan’s steady noise by more than 10 dB and keeps speech within 3 dB', async () => {
    const rate = 8000;
    const noise = fan(rate * 3);
    const quiet = await run(rate, noise);
    // After its first half second (it learns the noise), what is left of the fan:
    expect(db(rms(noise.subarray(rate / 2)) / rms(quiet.subarray(rate / 2)))).toBeGreaterThan(10);
    const speech = decodeWav(readFileSync(join(fixtures, '02-i-would-like-to-slt.16k.wav')), rate).samples;
    const kept = await run(rate, speech);
    expect(Math.abs(db(rms(kept) / rms(speech)))).toBeLessThan(3);
  });
});
