// The native decoder's channel-mean calls, used by the worker to learn each caller's channel fast.
import { afterAll, describe, expect, it } from 'vitest';
import { concatPcm } from '../../../../src/audio/pcm.ts';
import { resample } from '../../../../src/audio/resampler.ts';
import { loadDecoderClass } from '../../../../src/speech/stt/pocketsphinx/addon.ts';
import { telephoneModel } from '../../../../src/speech/stt/pocketsphinx/models.ts';
import { fixtureClips } from '../helpers.ts';

const model = telephoneModel();
if (!model) throw new Error('telephone model not built: run npm run setup');
const decoder = new (loadDecoderClass())([...model.args, '-logfn', '/dev/null']);
afterAll(() => decoder.close());

const distance = (a: number[], b: number[]) => Math.hypot(...a.map((x, i) => x - (b[i] ?? 0)));

describe('pocketsphinx addon: live channel mean', () => {
  it('setCmn replaces the mean and its weight, and cmn reads them back', () => {
    const mean = Array.from({ length: 13 }, (_, i) => i - 6);
    decoder.setCmn(mean, 42);
    const read = decoder.cmn();
    expect(read?.frames).toBe(42);
    read?.mean.forEach((v, i) => expect(v).toBeCloseTo(mean[i] ?? NaN, 4));
  });

  it('setCmn refuses a mean of the wrong length or a weight below one frame', () => {
    expect(() => decoder.setCmn([1, 2, 3], 10)).toThrow(/one value per cepstrum/);
    expect(() => decoder.setCmn(new Array<number>(13).fill(0), 0)).toThrow(/frames >= 1/);
  });

  it("updateCmn mid-utterance moves a lightly weighted mean most of the way to the caller's channel", async () => {
    const clips = await fixtureClips('mulaw');
    const speech = resample(concatPcm(clips.slice(0, 6).map((c) => c.samples)), 8000, 16000);
    // Where this audio's mean settles: a long utterance, then the library's own end-of-utterance update.
    decoder.setCmn(new Array<number>(13).fill(0), 1);
    decoder.startUtt();
    decoder.processRaw(speech);
    decoder.endUtt();
    const settled = decoder.cmn()?.mean ?? [];

    const start = new Array<number>(13).fill(0);
    decoder.setCmn(start, 100);
    decoder.startUtt();
    decoder.processRaw(speech.subarray(0, 3 * 16000)); // three seconds outweigh the 1 s prior 3:1
    decoder.updateCmn();
    const learnt = decoder.cmn()?.mean ?? [];
    decoder.endUtt();
    expect(distance(learnt, settled)).toBeLessThan(distance(start, settled) / 2);
  });
});
