// Audio hot paths per 20 ms frame, with the common npm alternative measured in the same run
// (alawmulaw for G.711, wavefile's resampler), plus VAD per frame and TTS first-audio / cancel
// latency. Run: npm run bench:audio
import alawmulaw from 'alawmulaw';
import { Bench } from 'tinybench';
import wavefile from 'wavefile';
import { aLawDecode, aLawEncode, muLawDecode, muLawEncode } from '../src/audio/g711.ts';
import { Resampler } from '../src/audio/resampler.ts';
import { EspeakTtsEngine } from '../src/speech/tts/espeak.ts';
import { FliteTtsEngine } from '../src/speech/tts/flite.ts';
import type { TtsEngine } from '../src/speech/types.ts';
import { SileroVadEngine } from '../src/speech/vad/silero.ts';
import { taskRows } from './report.ts';

function toneFrame(sampleRate: number): Int16Array {
  const n = sampleRate / 50;
  return Int16Array.from({ length: n }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / sampleRate) + 500 * Math.sin(i * 1.7)));
}

const frame8k = toneFrame(8000);
const ulawFrame = muLawEncode(frame8k);
const alawFrame = aLawEncode(frame8k);
const codecOut = new Uint8Array(160);
const pcmOut = new Int16Array(160);

const bench = new Bench({ time: 400, warmup: true });
bench
  .add('μ-law encode 20 ms (ours)', () => void muLawEncode(frame8k, codecOut))
  .add('μ-law encode 20 ms (alawmulaw)', () => void alawmulaw.mulaw.encode(frame8k))
  .add('μ-law decode 20 ms (ours)', () => void muLawDecode(ulawFrame, pcmOut))
  .add('μ-law decode 20 ms (alawmulaw)', () => void alawmulaw.mulaw.decode(ulawFrame))
  .add('A-law encode 20 ms (ours)', () => void aLawEncode(frame8k, codecOut))
  .add('A-law encode 20 ms (alawmulaw)', () => void alawmulaw.alaw.encode(frame8k))
  .add('A-law decode 20 ms (ours)', () => void aLawDecode(alawFrame, pcmOut))
  .add('A-law decode 20 ms (alawmulaw)', () => void alawmulaw.alaw.decode(alawFrame));

const pairs = [
  [8000, 16000],
  [16000, 8000],
  [16000, 24000],
  [24000, 16000],
  [16000, 48000],
  [48000, 16000],
] as const;
const withAlternative = new Set(['8000>16000', '16000>8000', '48000>16000']);
for (const [from, to] of pairs) {
  const resampler = new Resampler(from, to);
  const frame = toneFrame(from);
  bench.add(`resample ${from / 1000}k→${to / 1000}k 20 ms (ours, streaming)`, () => void resampler.push(frame));
  if (withAlternative.has(`${from}>${to}`)) {
    bench.add(`resample ${from / 1000}k→${to / 1000}k 20 ms (wavefile)`, () => {
      const wav = new wavefile.WaveFile();
      wav.fromScratch(1, from, '16', frame);
      wav.toSampleRate(to);
    });
  }
}

const vad = new SileroVadEngine();
for (const rate of [16000, 8000] as const) {
  const stream = await vad.open({ sampleRate: rate });
  const frame = toneFrame(rate);
  bench.add(`VAD Silero ${rate / 1000}k per 20 ms frame`, async () => void (await stream.push(frame)));
}

await bench.run();

// Medians lead: on a shared 2-core machine preemption inflates means and p99 by whole time slices.
console.table(taskRows(bench));

// Side-by-side ratios on medians: alternative / ours (>1 means ours is faster).
const medianOf = (name: string) => {
  const result = bench.tasks.find((t) => t.name === name)?.result;
  return result?.state === 'completed' ? result.latency.p50 : Number.NaN;
};
const ratios = bench.tasks
  .filter((t) => t.name.includes('(ours'))
  .map((t) => {
    const prefix = t.name.slice(0, t.name.indexOf('(ours'));
    const other = bench.tasks.find((o) => o !== t && o.name.startsWith(prefix) && !o.name.includes('(ours'));
    return other ? { task: prefix.trim(), vs: other.name.slice(prefix.length), 'speed-up': (medianOf(other.name) / medianOf(t.name)).toFixed(1) } : null;
  })
  .filter((r) => r !== null);
console.table(ratios);
await vad.close();

// TTS latency: not a tight loop, so measured directly. First audio = synthesize() call to first
// 20 ms chunk of a warm engine; cancel = abort() to the iterator finishing.
async function ttsLatency(engine: TtsEngine, runs: number): Promise<{ firstAudioMs: number; cancelMs: number }> {
  const sentence = 'Thank you for calling, how can I help you today?';
  const firsts: number[] = [];
  const cancels: number[] = [];
  for await (const _ of engine.synthesize('Warming up.', { sampleRate: 16000 })) void _;
  for (let i = 0; i < runs; i++) {
    await new Promise((resolve) => setTimeout(resolve, 150)); // let the spare process load
    const controller = new AbortController();
    const started = performance.now();
    const iterator = engine.synthesize(sentence, { sampleRate: 16000, signal: controller.signal })[Symbol.asyncIterator]();
    await iterator.next();
    firsts.push(performance.now() - started);
    await iterator.next();
    const abortedAt = performance.now();
    controller.abort();
    await iterator.next();
    cancels.push(performance.now() - abortedAt);
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  return { firstAudioMs: median(firsts), cancelMs: median(cancels) };
}

const tts: Array<Record<string, string>> = [];
const engines: Array<[string, TtsEngine]> = [
  ['flite slt', new FliteTtsEngine({ voice: 'slt' })],
  ['flite kal16', new FliteTtsEngine({ voice: 'kal16' })],
  ['espeak-ng en-us', new EspeakTtsEngine()],
];
for (const [label, engine] of engines) {
  const { firstAudioMs, cancelMs } = await ttsLatency(engine, 9);
  tts.push({ engine: label, 'first audio ms (median of 9)': firstAudioMs.toFixed(1), 'cancel ms (median of 9)': cancelMs.toFixed(2) });
  await engine.close();
}
console.table(tts);
