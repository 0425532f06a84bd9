// TTS latency per voice: first audio of a warm sentence and cancel, measured directly (not a
// tight loop). First audio = synthesize() call to the first 20 ms chunk of a warm engine; cancel
// = abort() to the iterator finishing. For flite also the native side of a cancel: the addon
// checks the cancel flag between audio blocks, so the longest gap between two blocks bounds how
// long a cancelled sentence keeps a worker busy. Then per voice: real-time factor (synthesis time
// over audio time, one sentence at a time), throughput with every worker busy (seconds of speech
// made per second: how many calls it can voice at once if each spoke without pause), the voice's
// size on disk, and intelligibility — the default recogniser's WER on its rendering of 50 agent
// sentences, at 16 kHz and through the 8 kHz μ-law phone path. Run: npm run bench:tts
// (BENCH_TTS_ONLY=latency skips the voice table).
import { statSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { muLawDecode, muLawEncode } from '../src/audio/g711.ts';
import { concatPcm } from '../src/audio/pcm.ts';
import { resample } from '../src/audio/resampler.ts';
import { MoonshineEngine } from '../src/speech/stt/moonshine/engine.ts';
import { corpusWer } from './wer.ts';
import { EspeakTtsEngine } from '../src/speech/tts/espeak.ts';
import { FliteTtsEngine } from '../src/speech/tts/flite.ts';
import { loadFliteAddon } from '../src/speech/tts/flite/addon.ts';
import type { TtsEngine } from '../src/speech/types.ts';

const RUNS = 11;
const SENTENCE = 'Thank you for calling, how can I help you today?';
// One clause with no break: the whole clause is analysed before its first audio.
const LONG_CLAUSE =
  'Our office on the corner of Main Street and Fifth Avenue is open from nine in the morning until half past five in the evening every weekday';

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const max = (values: number[]) => Math.max(...values);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function firstAudio(
  engine: TtsEngine,
  text: string,
  voiceId: string | undefined,
): Promise<{ firstMs: number; cancelMs: number }> {
  const controller = new AbortController();
  const started = performance.now();
  const iterator = engine
    .synthesize(text, { sampleRate: 16000, voiceId, signal: controller.signal })
    [Symbol.asyncIterator]();
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

const load = loadavg()
  .map((l) => l.toFixed(2))
  .join(', ');
const rows: Array<Record<string, string>> = [];
const flite = new FliteTtsEngine();
for (const voice of ['slt', 'rms', 'kal16', 'awb']) {
  flite.warm(voice);
  rows.push({
    ...(await measure(`flite ${voice}`, flite, voice)),
    'native stop ≤ ms (median of worst block gap)': nativeCancelBound(voice),
  });
}
await flite.close();
const espeak = new EspeakTtsEngine();
rows.push(await measure('espeak-ng en-us', espeak));
await espeak.close();
console.table(rows);
console.log(
  `load average before: ${load}; after: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(', ')}`,
);

// Fifty things an agent says: our own sentences (names, numbers as words, questions, lists).
const AGENT_SENTENCES = [
  'Thank you for calling, how can I help you today?',
  'I can book that appointment for you on Tuesday morning.',
  'Your order is on its way and should arrive by Friday.',
  'Could you spell your last name for me, please?',
  'The total comes to forty two dollars and fifty cents.',
  'We are open from nine in the morning until six in the evening.',
  'I have moved your delivery to the new address.',
  'Is there anything else I can help you with?',
  'Let me check that for you, it will only take a moment.',
  'Your account balance is one hundred and twelve dollars.',
  'I am sorry, that time is already taken.',
  'Would you prefer a window seat or an aisle seat?',
  'The doctor can see you at half past three tomorrow.',
  'Please have your card number ready.',
  'I will send you a confirmation by email.',
  'Your reference number is seven four two nine.',
  'The nearest store is on Main Street, next to the bank.',
  'I have cancelled your subscription as you asked.',
  'Can I have the postcode of the delivery address?',
  'Our premium plan includes unlimited calls and texts.',
  'The technician will call you before arriving.',
  'I understand, that must be frustrating.',
  'Shall I transfer you to our billing team?',
  'Your table for four is booked at eight tonight.',
  'The refund will reach your card within five working days.',
  'Do you want me to repeat the address?',
  'The parcel was signed for at the front desk.',
  'I can offer you a discount of ten percent.',
  'Please stay on the line while I connect you.',
  'Your prescription is ready for collection.',
  'We need a copy of your receipt to process the return.',
  'The flight leaves at seven fifteen from gate twelve.',
  'Would you like to hear about our evening classes?',
  'I have noted that you would rather be called after five.',
  'Your password has been reset; check your inbox.',
  'The weather may delay deliveries in the north.',
  'Is this the best number to reach you on?',
  'I can see two orders on your account.',
  'The repair is covered by your warranty.',
  'We will remind you the day before your visit.',
  'Your car will be ready to collect on Thursday afternoon.',
  'Could you tell me the date of birth on the account?',
  'The meeting room on the second floor is free at noon.',
  'I am afraid we do not deliver on Sundays.',
  'Your loyalty points can be used at the checkout.',
  'The cleaning takes about forty five minutes.',
  'I have added a note for the driver.',
  'You can pay by card, bank transfer or in cash.',
  'Thanks for waiting, I have the answer now.',
  'Goodbye, and have a lovely day.',
];

async function rendering(
  engine: TtsEngine,
  text: string,
  voiceId: string | undefined,
): Promise<{ samples: Int16Array; ms: number }> {
  const started = performance.now();
  const chunks: Int16Array[] = [];
  for await (const chunk of engine.synthesize(text, { sampleRate: 16000, voiceId })) chunks.push(chunk.samples);
  return { samples: concatPcm(chunks), ms: performance.now() - started };
}

/** Seconds of speech per wall second with `parallel` sentences in flight at once. */
async function throughput(engine: TtsEngine, voiceId: string | undefined, parallel: number): Promise<number> {
  const started = performance.now();
  let audio = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < AGENT_SENTENCES.length) {
        const text = AGENT_SENTENCES[next++]!;
        audio += (await rendering(engine, text, voiceId)).samples.length / 16000;
      }
    }),
  );
  return audio / ((performance.now() - started) / 1000);
}

const FLITE_LIBS = '/usr/lib/x86_64-linux-gnu';
const fliteVoiceFile: Record<string, string> = {
  slt: 'libflite_cmu_us_slt.so.1',
  rms: 'libflite_cmu_us_rms.so.1',
  kal16: 'libflite_cmu_us_kal16.so.1',
  awb: 'libflite_cmu_us_awb.so.1',
};
const sizeMb = (path: string) => {
  try {
    return `${(statSync(path).size / 2 ** 20).toFixed(1)} MB`;
  } catch {
    return '—';
  }
};

if (process.env.BENCH_TTS_ONLY !== 'latency') {
  const stt = new MoonshineEngine();
  const voiceRows: Array<Record<string, string>> = [];
  const heard = async (clips: Int16Array[], rate: number) => {
    const stream = await stt.open({ sampleRate: rate, language: 'en-US' });
    const pairs = [];
    for (const [i, samples] of clips.entries()) {
      for (let at = 0; at < samples.length; at += rate / 50) stream.push(samples.subarray(at, at + rate / 50));
      pairs.push({ reference: AGENT_SENTENCES[i]!, hypothesis: (await stream.finalize()).text });
    }
    await stream.close();
    return corpusWer(pairs);
  };
  const voices: Array<{ label: string; engine: TtsEngine; voiceId: string | undefined; size: string }> = [];
  const fliteEngine = new FliteTtsEngine();
  for (const voice of ['slt', 'rms', 'kal16', 'awb'])
    voices.push({
      label: `flite ${voice}`,
      engine: fliteEngine,
      voiceId: voice,
      size: sizeMb(`${FLITE_LIBS}/${fliteVoiceFile[voice]}`),
    });
  const espeakEngine = new EspeakTtsEngine();
  voices.push({
    label: 'espeak-ng en-us',
    engine: espeakEngine,
    voiceId: undefined,
    size: '13 MB (espeak-ng-data, all languages)',
  });
  for (const { label, engine, voiceId, size } of voices) {
    const renders = [];
    for (const text of AGENT_SENTENCES) renders.push(await rendering(engine, text, voiceId));
    const audioS = renders.reduce((n, r) => n + r.samples.length / 16000, 0);
    const synthS = renders.reduce((n, r) => n + r.ms / 1000, 0);
    const wide = renders.map((r) => r.samples);
    const phone = wide.map((x) => muLawDecode(muLawEncode(resample(x, 16000, 8000))));
    voiceRows.push({
      voice: label,
      'real-time factor': (synthS / audioS).toFixed(3),
      [`speech s per s, ${availableParallelism()} in flight`]: (
        await throughput(engine, voiceId, availableParallelism())
      ).toFixed(1),
      size,
      'WER 16 kHz (50 sentences)': `${(100 * (await heard(wide, 16000))).toFixed(1)}%`,
      'WER 8 kHz μ-law': `${(100 * (await heard(phone, 8000))).toFixed(1)}%`,
    });
    console.log(voiceRows.at(-1));
  }
  await fliteEngine.close();
  await espeakEngine.close();
  await stt.close();
  console.table(voiceRows);
  console.log(
    `load average at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(', ')}`,
  );
}
