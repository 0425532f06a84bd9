// npm run bench:noise
// Recognition and VAD under noise on the phone path, with and without noise suppression (RNNoise):
// the recorded human telephone prompts (asterisk, a TEST SET ONLY) mixed with music on hold
// (asterisk-moh-opsound), office babble (six of our flite phrases in four voices, overlapping) or
// a fan (stationary pink noise) at 10 and 5 dB SNR, with half a second of the noise before and after each prompt,
// through
// 8 kHz μ-law, then (or not) the denoiser, then Moonshine: corpus WER per condition. VAD: Silero's
// speech starts per minute of the noise alone (at the 5 dB level: false barge-ins), and the share
// of clean speech frames it still finds. And the denoiser's cost per 20 ms frame.
// BENCH_ASTERISK=N sets the prompt sample (default 100). BENCH_NOISE_SET=game reads the game voices
// instead (bench/sets/game-voices.ts: ten voice actors, every other line of the 198, 99).
// Writes artifacts/bench/noise[-game].{json,md}.
import { availableParallelism, loadavg } from 'node:os';
import { muLawDecode, muLawEncode } from '../src/audio/g711.ts';
import { concatPcm } from '../src/audio/pcm.ts';
import { resample } from '../src/audio/resampler.ts';
import { readWavFile } from '../src/audio/wav.ts';
import { openRnnoise } from '../src/speech/denoise/rnnoise.ts';
import { MoonshineEngine } from '../src/speech/stt/moonshine/engine.ts';
import { corpusWer } from './wer.ts';
import { SileroVadEngine } from '../src/speech/vad/silero.ts';
import { energyLabels, framesInSegments, segmentsOf } from '../test/speech/vad/measure.ts';
import { asteriskPrompts } from '../test/support/test-sets.ts';
import { activeRms, phoneNoises, scaled } from './noise-sources.ts';
import { markdownTable, writeArtifacts } from './report.ts';
import { gameVoices } from './sets/game-voices.ts';

const RATE = 8000;
const FRAME = RATE / 50;
const wanted = Number(process.env.BENCH_ASTERISK ?? 100);
const loadStart = loadavg();

interface Clip {
  text: string;
  samples: Int16Array;
}

/** `length` samples of the noise from `offset`, looped. */
function noiseAt(noise: Int16Array, offset: number, length: number): Int16Array {
  const out = new Int16Array(length);
  for (let i = 0; i < length; i++) out[i] = noise[(offset + i) % noise.length]!;
  return out;
}

/** The prompt with 0.5 s of noise around it, the noise scaled to `snrDb` under the speech, then μ-law both ways. */
function mixed(clip: Clip, noise: Int16Array, noiseRms: number, snrDb: number | null, offset: number): Int16Array {
  const pad = RATE / 2;
  const speech = concatPcm([new Int16Array(pad), clip.samples, new Int16Array(pad)]);
  let signal = speech;
  if (snrDb !== null) {
    const gain = activeRms(clip.samples) / noiseRms / 10 ** (snrDb / 20);
    const n = scaled(noiseAt(noise, offset, speech.length), gain);
    signal = Int16Array.from(speech, (s, i) => Math.max(-32768, Math.min(32767, s + n[i]!)));
  }
  return muLawDecode(muLawEncode(signal));
}

async function denoised(samples: Int16Array): Promise<Int16Array> {
  const denoiser = await openRnnoise(RATE);
  const out: Int16Array[] = [];
  for (let i = 0; i < samples.length; i += FRAME) out.push(denoiser.process(samples.slice(i, i + FRAME)));
  // The denoiser runs a fixed delay behind: a little silence lets the last words out.
  for (let i = 0; i < 4; i++) out.push(denoiser.process(new Int16Array(FRAME)));
  denoiser.close();
  return concatPcm(out);
}

async function werOf(engine: MoonshineEngine, clips: Clip[], signals: Int16Array[]): Promise<number> {
  // Two "callers" (streams) in parallel, as bench:speech reads the prompts.
  const halves = [0, 1].map((h) => clips.map((c, i) => ({ c, s: signals[i]! })).filter((_, i) => i % 2 === h));
  const pairs = await Promise.all(
    halves.map(async (half) => {
      const stream = await engine.open({ sampleRate: RATE, language: 'en-US' });
      const out = [];
      for (const { c, s } of half) {
        for (let i = 0; i < s.length; i += FRAME) stream.push(s.subarray(i, i + FRAME));
        out.push({ reference: c.text, hypothesis: (await stream.finalize()).text });
      }
      await stream.close();
      return out;
    }),
  );
  return corpusWer(pairs.flat());
}

const setName = process.env.BENCH_NOISE_SET === 'game' ? 'game' : 'asterisk';
async function speechClips(): Promise<Clip[]> {
  if (setName === 'game') {
    const lines = (await gameVoices()).filter((_, i) => i % 2 === 0);
    return Promise.all(
      lines.map(async (v) => {
        const wav = await readWavFile(v.path);
        return { text: v.text, samples: resample(wav.samples, wav.sampleRate, RATE) };
      }),
    );
  }
  const prompts = asteriskPrompts().sort((a, b) => a.id.localeCompare(b.id));
  if (prompts.length === 0) throw new Error('the asterisk prompts are not installed (npm run setup)');
  const step = Math.max(1, Math.floor(prompts.length / wanted));
  const sample = prompts.filter((_, i) => i % step === 0).slice(0, wanted);
  return Promise.all(sample.map(async (p) => ({ text: p.text, samples: (await readWavFile(p.file, RATE)).samples })));
}
const clips = await speechClips();

const noises = await phoneNoises();
const babble = noises[1]!.samples;

const engine = new MoonshineEngine();
const rows: Record<string, string | number>[] = [];
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const conditions: { noise: (typeof noises)[number] | null; snr: number | null }[] = [{ noise: null, snr: null }];
for (const noise of noises) for (const snr of [10, 5]) conditions.push({ noise, snr });
for (const { noise, snr } of conditions) {
  const plain = clips.map((c, i) => mixed(c, noise?.samples ?? new Int16Array(1), noise?.rms ?? 1, snr, i * 7919));
  const clean = await Promise.all(plain.map(denoised));
  const row = {
    set: noise ? `${noise.name}, ${snr} dB SNR` : 'clean',
    [setName === 'game' ? 'game lines' : 'prompts']: clips.length,
    'WER without': pct(await werOf(engine, clips, plain)),
    'WER with RNNoise': pct(await werOf(engine, clips, clean)),
  };
  rows.push(row);
  console.log(row);
}
await engine.close();

// VAD: false starts on the noise alone at the 5 dB level, and clean speech frames still found.
const vad = new SileroVadEngine();
const vadRows: Record<string, string | number>[] = [];
const typicalSpeech = activeRms(concatPcm(clips.slice(0, 20).map((c) => c.samples)));
for (const noise of noises) {
  const level = scaled(noise.samples.subarray(0, 30 * RATE), typicalSpeech / noise.rms / 10 ** (5 / 20));
  const line = muLawDecode(muLawEncode(level));
  const minutes = line.length / RATE / 60;
  const starts = async (x: Int16Array) =>
    (await segmentsOf(await vad.open({ sampleRate: RATE }), x, RATE)).length / minutes;
  const row = {
    noise: `${noise.name} alone at the 5 dB level (${(minutes * 60).toFixed(0)} s)`,
    'speech starts/min without': (await starts(line)).toFixed(1),
    'with RNNoise': (await starts(await denoised(line))).toFixed(1),
  };
  vadRows.push(row);
  console.log(row);
}
{
  const speech = concatPcm(
    clips.slice(0, 30).flatMap((c) => [new Int16Array(RATE / 2), muLawDecode(muLawEncode(c.samples))]),
  );
  const labels = energyLabels(speech, RATE, -45);
  const found = async (x: Int16Array, shiftFrames: number) => {
    const frames = framesInSegments(
      await segmentsOf(await vad.open({ sampleRate: RATE }), x, RATE),
      labels.length + shiftFrames,
    );
    let hit = 0;
    let total = 0;
    labels.forEach((l, i) => {
      if (!l) return;
      total++;
      if (frames[i + shiftFrames]) hit++;
    });
    return pct(hit / total);
  };
  const row = {
    noise: `clean ${setName === 'game' ? 'game lines' : 'prompts'}: speech frames found`,
    'speech starts/min without': await found(speech, 0),
    'with RNNoise': await found(await denoised(speech), 1),
  };
  vadRows.push(row);
  console.log(row);
}
await vad.close();

// Cost: the denoiser per 20 ms frame at each call rate.
const costRows: Record<string, string>[] = [];
for (const rate of [8000, 16000]) {
  const denoiser = await openRnnoise(rate);
  const frame = resample(babble.subarray(0, RATE), RATE, rate).subarray(0, rate / 50);
  for (let i = 0; i < 200; i++) denoiser.process(frame);
  const t = performance.now();
  for (let i = 0; i < 2000; i++) denoiser.process(frame);
  costRows.push({
    rate: `${rate / 1000} kHz`,
    'per 20 ms frame': `${(((performance.now() - t) / 2000) * 1000).toFixed(0)} µs`,
    'share of a core per call': pct((performance.now() - t) / 2000 / 20),
  });
  denoiser.close();
}

const md = [
  `# bench:noise — the phone path under noise, with and without RNNoise (${setName === 'game' ? 'game voices' : 'asterisk prompts'})`,
  '',
  markdownTable(rows),
  '',
  markdownTable(vadRows),
  '',
  markdownTable(costRows),
  '',
  `load average ${loadStart.map((x) => x.toFixed(2)).join(' ')} at the start, ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')} at the end, ${availableParallelism()} cores`,
].join('\n');
const suffix = setName === 'game' ? '-game' : '';
writeArtifacts(`noise${suffix}`, { when: new Date().toISOString(), rows, vadRows, costRows }, md);
console.log(md);
process.exit(0);
