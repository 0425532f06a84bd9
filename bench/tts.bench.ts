// TTS latency per voice: first audio of a warm sentence and cancel, measured directly (not a
// tight loop). First audio = synthesize() call to the first 20 ms chunk of a warm engine; cancel
// = abort() to the iterator finishing. For flite also the native side of a cancel: the addon
// checks the cancel flag between audio blocks, so the longest gap between two blocks bounds how
// long a cancelled sentence keeps a worker busy. Run: npm run bench:tts
import { loadavg } from 'node:os';
import { EspeakTtsEngine } from '../src/speech/tts/espeak.ts';
import { FliteTtsEngine } from '../src/speech/tts/flite.ts';
import { loadFliteAddon } from '../src/speech/tts/flite/addon.ts';
import type { TtsEngine } from '../src/speech/types.ts';

const RUNS = 11;
const SENTENCE = 'Thank you for calling, how can I help you today?';
// One clause with no break: the whole clause is analysed before its first audio.
const LONG_CLAUSE = 'Our office on the corner of Main Street and Fifth Avenue is open from nine in the morning until half past five in the evening every weekday';

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const max = (values: number[]) => Math.max(...values);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function firstAudio(engine: TtsEngine, text: string, voiceId: string | undefined): Promise<{ firstMs: number; cancelMs: number }> {
  const controller = new AbortController();
  const started = performance.now();
  const iterator = engine.synthesize(text, { sampleRate: 16000, voiceId, signal: controller.signal })[Symbol.asyncIterator]();
  await iterator.next();
  const firstMs = performance.now() - started;
  await iterator.next();
  const abortedAt = performance.now();
  controller.abort();
  await iterator.next();
  return { firstMs, cancelMs: performance.now() - abortedAt };
}

async function measure(label: string, engine: TtsEngine, voiceId?: string): Promise<Record<string, string>> {
  for await (const _ of engine.synthesize('Warming up.', { sampleRate: 16000, voiceId })) void _;
  const firsts: number[] = [];
  const longs: number[] = [];
  const cancels: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    await pause(100); // a cancelled run's worker settles; the machine's other work gets a slice
    const short = await firstAudio(engine, SENTENCE, voiceId);
    firsts.push(short.firstMs);
    cancels.push(short.cancelMs);
    await pause(100);
    longs.push((await firstAudio(engine, LONG_CLAUSE, voiceId)).firstMs);
  }
  return {
    engine: label,
    [`first audio ms (median of ${RUNS})`]: median(firsts).toFixed(1),
    'first audio max ms': max(firsts).toFixed(1),
    [`first audio, one long clause ms (median)`]: median(longs).toFixed(1),
    'cancel ms (median)': median(cancels).toFixed(2),
  };
}

/** Longest time between two audio blocks of the long clause: how late the addon sees a cancel. */
function nativeCancelBound(voice: string): string {
  const addon = loadFliteAddon();
  const cancel = new Int32Array(new SharedArrayBuffer(4));
  const gaps: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    let last = 0;
    const runGaps: number[] = [];
    addon.synthesize(voice, LONG_CLAUSE, 1, cancel, () => {
      const now = performance.now();
      if (last > 0) runGaps.push(now - last);
      last = now;
    });
    gaps.push(max(runGaps));
  }
  return median(gaps).toFixed(1);
}

const load = loadavg().map((l) => l.toFixed(2)).join(', ');
const rows: Array<Record<string, string>> = [];
const flite = new FliteTtsEngine();
for (const voice of ['slt', 'rms', 'kal16', 'awb']) {
  flite.warm(voice);
  rows.push({ ...(await measure(`flite ${voice}`, flite, voice)), 'native stop ≤ ms (median of worst block gap)': nativeCancelBound(voice) });
}
await flite.close();
const espeak = new EspeakTtsEngine();
rows.push(await measure('espeak-ng en-us', espeak));
await espeak.close();
console.table(rows);
console.log(`load average before: ${load}; after: ${loadavg().map((l) => l.toFixed(2)).join(', ')}`);
