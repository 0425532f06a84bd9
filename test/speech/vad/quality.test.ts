// Honest quality bars on real audio: our flite caller phrases (speech frames labelled by the
// energy of the clean synthetic audio) and Debian's music on hold (no speech at all).
import { afterAll, describe, expect, it } from 'vitest';
import { concatPcm, silence } from '../../../src/audio/pcm.ts';
import { resample } from '../../../src/audio/resampler.ts';
import { readWavFile } from '../../../src/audio/wav.ts';
import { SileroVadEngine } from '../../../src/speech/vad/silero.ts';
import { asteriskPrompts, asteriskSilenceFiles, fixtures, musicOnHoldFiles } from '../../support/test-sets.ts';
import { energyLabels, framesInSegments, segmentsOf } from './measure.ts';

const engine = new SileroVadEngine();
afterAll(() => engine.close());

/** Seconds of each music file analysed: enough variety, bounded test time. */
const MUSIC_SECONDS = 45;
/** Generous: these walk minutes of audio and the test machine may be shared. */
const SLOW = 90_000;

describe.each([16000, 8000] as const)('VAD quality at %i Hz', (rate) => {
  it(
    'finds at least 95% of the speech frames of the fixture phrases',
    async () => {
      let speechFrames = 0;
      let found = 0;
      for (const fixture of fixtures().filter((f) => f.sampleRate === rate)) {
        const { samples } = await readWavFile(fixture.path);
        const signal = concatPcm([silence(500, rate), samples, silence(500, rate)]);
        const labels = energyLabels(signal, rate);
        const detected = framesInSegments(
          await segmentsOf(await engine.open({ sampleRate: rate }), signal, rate),
          labels.length,
        );
        labels.forEach((speech, i) => {
          if (!speech) return;
          speechFrames++;
          if (detected[i]) found++;
        });
      }
      expect(speechFrames).toBeGreaterThan(1000);
      expect(found / speechFrames).toBeGreaterThanOrEqual(0.95);
    },
    SLOW,
  );

  it(
    'flags at most 5% of music-on-hold frames as speech',
    async () => {
      let frames = 0;
      let flagged = 0;
      for (const file of musicOnHoldFiles()) {
        const music = await readWavFile(file);
        const excerpt = resample(music.samples.subarray(0, MUSIC_SECONDS * music.sampleRate), music.sampleRate, rate);
        const count = Math.floor(excerpt.length / (rate / 50));
        frames += count;
        flagged += framesInSegments(
          await segmentsOf(await engine.open({ sampleRate: rate }), excerpt, rate),
          count,
        ).filter(Boolean).length;
      }
      expect(frames).toBeGreaterThan(10_000);
      expect(flagged / frames).toBeLessThanOrEqual(0.05);
    },
    SLOW,
  );

  // Human speech: every 10th asterisk telephone prompt (a test set only, see test-sets.ts).
  it(
    'detects speech in at least 95% of sampled human telephone prompts',
    async () => {
      const sample = asteriskPrompts().filter((_, i) => i % 10 === 0);
      let detected = 0;
      for (const prompt of sample) {
        const recording = await readWavFile(prompt.file, rate);
        const signal = concatPcm([silence(300, rate), recording.samples, silence(300, rate)]);
        if ((await segmentsOf(await engine.open({ sampleRate: rate }), signal, rate)).length > 0) detected++;
      }
      expect(sample.length).toBeGreaterThan(40);
      expect(detected / sample.length).toBeGreaterThanOrEqual(0.95);
    },
    SLOW,
  );

  it('finds no speech in the recorded line silences of the prompt set', async () => {
    const files = asteriskSilenceFiles();
    expect(files.length).toBeGreaterThanOrEqual(5);
    for (const file of files) {
      const recording = await readWavFile(file, rate);
      expect(await segmentsOf(await engine.open({ sampleRate: rate }), recording.samples, rate)).toEqual([]);
    }
  });
});
