// Audio hot paths per 20 ms frame, with the common npm alternative measured in the same run
// (alawmulaw for G.711, wavefile's resampler), plus Opus and VAD per frame. TTS first audio and cancel
// are in tts.bench.ts; the recogniser's band probe per frame. Run: npm run bench:audio
import alawmulaw from 'alawmulaw';
import { Bench } from 'tinybench';
import wavefile from 'wavefile';
import { BandwidthProbe } from '../src/audio/bandwidth.ts';
import { aLawDecode, aLawEncode, muLawDecode, muLawEncode } from '../src/audio/g711.ts';
import { OpusCodec } from '../src/audio/opus/index.ts';
import { Resampler } from '../src/audio/resampler.ts';
import { SileroVadEngine } from '../src/speech/vad/silero.ts';
import { taskRows } from './report.ts';

function toneFrame(sampleRate: number): Int16Array {
  const n = sampleRate / 50;
  return Int16Array.from({ length: n }, (_, i) =>
    Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / sampleRate) + 500 * Math.sin(i * 1.7)),
  );
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

// The recogniser's band probe runs on a wideband call's first ~300 ms of speech (speechMs set
// out of reach here, so every frame is weighed).
const probe = new BandwidthProbe({ sampleRate: 16000, speechMs: Number.MAX_SAFE_INTEGER });
const frame16k = toneFrame(16000);
bench.add('band probe 16k per 20 ms frame', () => void probe.push(frame16k));

// A browser call in Opus: one decode per caller frame, one encode per agent frame, at the
// browser socket's settings (16 kHz mono 24 kbit/s; complexity 5 live, libopus's default 10 beside it).
for (const complexity of [5, 10]) {
  const codec = new OpusCodec({ rate: 16000, channels: 1, bitrate: 24000, complexity });
  bench.add(`Opus encode 16k 20 ms (complexity ${complexity})`, () => void codec.encode(frame16k));
}
const opus = new OpusCodec({ rate: 16000, channels: 1, bitrate: 24000, complexity: 5 });
const opusPacket = opus.encode(frame16k);
bench.add('Opus decode 16k 20 ms', () => void opus.decode(opusPacket));

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
    return other
      ? {
          task: prefix.trim(),
          vs: other.name.slice(prefix.length),
          'speed-up': (medianOf(other.name) / medianOf(t.name)).toFixed(1),
        }
      : null;
  })
  .filter((r) => r !== null);
console.table(ratios);
await vad.close();
