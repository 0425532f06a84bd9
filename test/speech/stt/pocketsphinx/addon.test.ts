// The native decoder's channel-mean calls, used by the worker to learn each caller's channel fast.
import { afterAll, describe, expect, it } from 'vitest';
import { concatPcm } from '../../../../src/audio/pcm.ts';
import { resample } from '../../../../src/audio/resampler.ts';
import { Worker } from 'node:worker_threads';
import { ADDON_PATH, loadDecoderClass } from '../../../../src/speech/stt/pocketsphinx/addon.ts';
import { telephoneModel } from '../../../../src/speech/stt/pocketsphinx/models.ts';
import { fixtureClips } from '../helpers.ts';

const model = telephoneModel();
if (!model) throw new Error('telephone model not built: run npm run setup');
const decoder = new (loadDecoderClass())(model.args);
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

/** Makes, uses and frees `count` decoders in a worker thread of its own; resolves with the exit code. */
function decoderChurn(args: string[], count: number): Promise<number> {
  const code = `
    const { workerData } = require('node:worker_threads');
    const { Decoder } = require(workerData.addon);
    const noise = Int16Array.from({ length: 16000 }, (_, i) => ((i * 7919) % 2001) - 1000);
    for (let i = 0; i < workerData.count; i++) {
      const d = new Decoder(workerData.args);
      d.startUtt();
      d.processRaw(noise);
      d.endUtt();
      d.close();
    }`;
  return new Promise((resolve, reject) => {
    const worker = new Worker(code, { eval: true, workerData: { addon: ADDON_PATH, args, count } });
    worker.once('error', reject);
    worker.once('exit', resolve);
  });
}

describe('pocketsphinx addon: threads', () => {
  // pocketsphinx's log target is one global: with -logfn every new decoder closed the FILE that
  // decoders in other threads could be writing to. Four decoders a thread: twelve made and freed
  // while the other threads decode (a decoder of this model costs ~0.7 s of CPU to load).
  it('decoders made, run and freed at once in three threads share nothing that breaks: every thread finishes', async () => {
    const codes = await Promise.all([0, 1, 2].map(() => decoderChurn(model.args, 4)));
    expect(codes).toEqual([0, 0, 0]);
  }, 120_000);
});
