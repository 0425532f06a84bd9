// Speech bench: WER of the recognisers on our flite fixtures (16 kHz and through the 8 kHz μ-law
// telephone path) and on two human sets, TEST SETS ONLY: recorded telephone prompts (asterisk core
// sounds, one speaker reading) and game voices (ten voice actors acting, Flight of the Amazon Queen
// from Debian, built on first run under artifacts/sets/: bench/sets/game-voices.ts), each per path
// (16 kHz, 8 kHz μ-law) and per speaker; end of speech -> final latency, concurrent real-time
// streams and event-loop delay, for pocketsphinx and then for Moonshine; then the VAD's speech
// frames found, music frames flagged and time per frame. Run: npm run bench:speech
// (BENCH_ASTERISK=N sets the prompt sample size, default 200; BENCH_ONLY=realtime measures only
// latency, concurrency and event-loop delay, BENCH_ONLY=wer only the WER sets, =hints only Moonshine's phrase hints;
// BENCH_ENGINES=
// pocketsphinx, =moonshine (the default model), =moonshine-tiny, =moonshine-base or =vad benches one of them;
// BENCH_REVIEW=N lists the N worst game-voice lines; BENCH_ONLY=wideband compares the line formats a carrier may
// stream: 8 kHz μ-law, 16 kHz L16 and G.722).
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { muLawDecode, muLawEncode } from '../src/audio/g711.ts';
import { g722Decoder } from '../src/audio/g722.ts';
import { LineAudioIn, LineAudioOut, type LineFormat } from '../src/audio/line-format.ts';
import { concatPcm, silence } from '../src/audio/pcm.ts';
import { resample } from '../src/audio/resampler.ts';
import { readWavFile } from '../src/audio/wav.ts';
import { MOONSHINE_DEFAULTS, MoonshineEngine } from '../src/speech/stt/moonshine/engine.ts';
import { MOONSHINE_SIZE_NAMES, type MoonshineSize } from '../src/speech/stt/moonshine/recogniser.ts';
import { PocketsphinxEngine } from '../src/speech/stt/pocketsphinx/engine.ts';
import { corpusWer, wer } from './wer.ts';
import type { SttEngine, SttStream } from '../src/speech/types.ts';
import { SileroVadEngine } from '../src/speech/vad/silero.ts';
import { energyLabels, framesInSegments, segmentsOf } from '../test/speech/vad/measure.ts';
import { asteriskPrompts, fixtures, musicOnHoldFiles } from '../test/support/test-sets.ts';
import { GAME_TERMS, gameNameLines, gameVoices, termsIn } from './sets/game-voices.ts';

interface Clip {
  text: string;
  voice?: string;
  samples: Int16Array;
  sampleRate: number;
}

interface Row {
  measure: string;
  set: string;
  value: string;
  bar: string;
}
const rows: Row[] = [];
const started = performance.now();

/** Keep a row for the table and show it at once: the whole bench takes minutes. */
function record(row: Row): void {
  rows.push(row);
  process.stdout.write(
    `  [${((performance.now() - started) / 1000).toFixed(0)} s] ${row.measure}, ${row.set}: ${row.value}\n`,
  );
}

async function load(entries: { path: string; text: string; voice?: string }[]): Promise<Clip[]> {
  return Promise.all(
    entries.map(async (e) => ({ text: e.text, voice: e.voice ?? 'allison', ...(await readWavFile(e.path)) })),
  );
}

function pushAll(stream: SttStream, clip: Clip): void {
  const n = clip.sampleRate / 50;
  for (let i = 0; i < clip.samples.length; i += n) stream.push(clip.samples.subarray(i, i + n));
}

/**
 * Reference and hypothesis per clip. Each voice is one call (one stream: its decoder adapts to that caller); calls run
 * in parallel.
 */
async function transcribe(
  engine: SttEngine,
  clips: Clip[],
  phrases: string[] = [],
): Promise<Array<{ reference: string; hypothesis: string; voice: string }>> {
  const voices = [...new Set(clips.map((c) => c.voice ?? ''))];
  const pairs = await Promise.all(
    voices.map(async (v) => {
      const mine = clips.filter((c) => (c.voice ?? '') === v);
      const stream = await engine.open({ sampleRate: mine[0]?.sampleRate ?? 16000, language: 'en-US', phrases });
      const out = [];
      for (const clip of mine) {
        pushAll(stream, clip);
        out.push({ reference: clip.text, hypothesis: (await stream.finalize()).text, voice: v });
      }
      await stream.close();
      return out;
    }),
  );
  return pairs.flat();
}

/** Corpus WER of the clips. */
async function werOf(engine: SttEngine, clips: Clip[]): Promise<number> {
  return corpusWer(await transcribe(engine, clips));
}

/** A clip as a 16 kHz call hears it (the game voices are 11,025 Hz: band-limited to 5.5 kHz even here). */
const wideband = (clip: Clip): Clip => ({
  ...clip,
  samples: resample(clip.samples, clip.sampleRate, 16000),
  sampleRate: 16000,
});
/** A clip as a phone call hears it: 8 kHz, μ-law both ways. */
function telephone(clip: Clip): Clip {
  const narrow = clip.sampleRate === 8000 ? clip.samples : resample(clip.samples, clip.sampleRate, 8000);
  return { ...clip, samples: muLawDecode(muLawEncode(narrow)), sampleRate: 8000 };
}

/** A clip through a line in `format` (encoded and decoded frame by frame, as a call's stream carries it). */
function overLine(clip: Clip, format: LineFormat): Clip {
  const source = clip.sampleRate === format.rate ? clip.samples : resample(clip.samples, clip.sampleRate, format.rate);
  const out = new LineAudioOut(format);
  const line = new LineAudioIn(format);
  const frame = format.rate / 50;
  const frames: Int16Array[] = [];
  for (let at = 0; at + frame <= source.length; at += frame)
    frames.push(...line.push(out.encode(source.subarray(at, at + frame))));
  return { ...clip, samples: concatPcm(frames), sampleRate: format.rate };
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** Push clips in real time (20 ms frames every 20 ms) to `count` streams; finalize each at its end. */
async function realTime(
  engine: SttEngine,
  clip: Clip,
  count: number,
): Promise<{ latencies: number[]; loopMaxMs: number }> {
  const streams = await Promise.all(
    Array.from({ length: count }, () => engine.open({ sampleRate: clip.sampleRate, language: 'en-US' })),
  );
  const n = clip.sampleRate / 50;
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  const started = performance.now();
  for (let i = 0, frame = 0; i < clip.samples.length; i += n, frame++) {
    for (const s of streams) s.push(clip.samples.subarray(i, i + n));
    // Pace against the wall clock so timer drift does not slow the audio.
    const due = started + (frame + 1) * 20 - performance.now();
    if (due > 0) await sleep(due);
  }
  const latencies = await Promise.all(
    streams.map(async (s) => {
      const t = performance.now();
      await s.finalize();
      return performance.now() - t;
    }),
  );
  histogram.disable();
  await Promise.all(streams.map((s) => s.close()));
  return { latencies, loopMaxMs: histogram.max / 1e6 };
}

/** The asterisk prompt sample, every k-th by id, as clips of two alternating "callers". */
async function asteriskSample(): Promise<{ clips: Clip[]; label: string; files: string[] }> {
  const prompts = asteriskPrompts().sort((a, b) => a.id.localeCompare(b.id));
  const wanted = Number(process.env.BENCH_ASTERISK ?? 200);
  const step = Math.max(1, Math.floor(prompts.length / wanted));
  const sample = prompts.filter((_, i) => i % step === 0).slice(0, wanted);
  const clips = await load(sample.map((p, i) => ({ path: p.file, text: p.text, voice: `allison-${i % 2}` })));
  return {
    clips,
    label: `asterisk prompts 8 kHz (${clips.length} of ${prompts.length}, every ${step}th by id)`,
    files: sample.map((p) => p.file),
  };
}

/** The game voices (or the lines holding the game's names) as clips, each actor one caller. */
async function gameVoiceClips(set: Awaited<ReturnType<typeof gameVoices>> | null = null): Promise<Clip[]> {
  return Promise.all(
    (set ?? (await gameVoices())).map(async (v) => ({ text: v.text, voice: v.actor, ...(await readWavFile(v.path)) })),
  );
}

/** Share of the references' game terms that the hypotheses got right, word for word. */
function termRecall(pairs: Array<{ reference: string; hypothesis: string }>): string {
  let said = 0;
  let heard = 0;
  for (const p of pairs) {
    const terms = termsIn(p.reference);
    const got = new Set(termsIn(p.hypothesis));
    said += terms.length;
    heard += terms.filter((t) => got.has(t)).length;
  }
  return `${heard}/${said} (${pct(heard / Math.max(1, said))})`;
}

/**
 * Phrase hints (stt.phrases) with Moonshine, through the phone: lines holding the game's names and
 * terms, the agent given GAME_TERMS. The token bonus is swept on the even lines (calibration) and
 * measured at the default on the odd ones; the main game set with the same hints checks that the
 * bias does not hurt speech without the names.
 */
async function hintRows(model: MoonshineSize): Promise<void> {
  const name = `moonshine ${model}`;
  const names = (await gameVoiceClips(await gameNameLines())).map(telephone);
  const calibration = names.filter((_, i) => i % 2 === 0);
  const test = names.filter((_, i) => i % 2 === 1);
  const plain = new MoonshineEngine({ model });
  const baseline = await transcribe(plain, calibration);
  process.stdout.write(
    `  hints calibration (${calibration.length} lines): no hints WER ${pct(corpusWer(baseline))}, terms ${termRecall(baseline)}\n`,
  );
  for (const bonus of [1, 2, 3, 4, 6]) {
    const engine = new MoonshineEngine({ model, phraseTokenBonus: bonus });
    const pairs = await transcribe(engine, calibration, GAME_TERMS);
    process.stdout.write(
      `  hints calibration, bonus ${bonus}: WER ${pct(corpusWer(pairs))}, terms ${termRecall(pairs)}\n`,
    );
    await engine.close();
  }
  const without = await transcribe(plain, test);
  const withHints = await transcribe(plain, test, GAME_TERMS);
  const speakers = new Set(test.map((c) => c.voice)).size;
  record({
    measure: 'WER without / with hints',
    set: `${name}, game lines with rare names, 8 kHz μ-law (${test.length}, ${speakers} actors, ${GAME_TERMS.length} hints)`,
    value: `${pct(corpusWer(without))} / ${pct(corpusWer(withHints))}`,
    bar: 'lower with',
  });
  record({
    measure: 'names heard without / with hints',
    set: `${name}, the same lines`,
    value: `${termRecall(without)} / ${termRecall(withHints)}`,
    bar: 'higher with',
  });
  const game = (await gameVoiceClips()).map(telephone);
  const control = await transcribe(plain, game, GAME_TERMS);
  record({
    measure: 'WER without / with hints',
    set: `${name}, game voices 8 kHz μ-law (${game.length}, few of the names)`,
    value: `${pct(corpusWer(await transcribe(plain, game)))} / ${pct(corpusWer(control))}`,
    bar: 'no worse with',
  });
  await plain.close();
}

/**
 * WER on the human sets: game voices at 16 kHz and through the phone, the asterisk prompts
 * through the phone, both together through the phone (the whole human set: issue 22's goal is
 * <= 12% there), and each speaker on both paths.
 */
async function humanRows(name: string, engine: SttEngine): Promise<void> {
  const game = await gameVoiceClips();
  const asterisk = (await asteriskSample()).clips;
  const gameWide = await transcribe(engine, game.map(wideband));
  // Real-time factor: CPU time of the whole process (the decoders' worker threads included) over
  // the seconds of audio, on the phone path.
  const cpuBefore = process.cpuUsage();
  const gamePhone = await transcribe(engine, game.map(telephone));
  const cpu = process.cpuUsage(cpuBefore);
  const audioSeconds = game.reduce((sum, c) => sum + c.samples.length / c.sampleRate, 0);
  const asteriskPhone = await transcribe(engine, asterisk.map(telephone));
  const speakers = new Set(game.map((c) => c.voice)).size;
  // BENCH_REVIEW=N prints the N worst game-voice lines at 16 kHz for reading against their subtitles
  // (how bench/sets/game-voices-review.json was made).
  const review = Number(process.env.BENCH_REVIEW ?? 0);
  if (review > 0) {
    const worst = gameWide.map((p) => ({ ...p, wer: wer(p.reference, p.hypothesis) })).sort((a, b) => b.wer - a.wer);
    for (const p of worst.slice(0, review))
      process.stdout.write(`  ${pct(p.wer)} ${p.voice}\n    subtitle: ${p.reference}\n    heard:    ${p.hypothesis}\n`);
  }
  record({
    measure: 'WER',
    set: `${name}, game voices 16 kHz (${game.length}, ${speakers} actors; sound band-limited to 5.5 kHz)`,
    value: pct(corpusWer(gameWide)),
    bar: '',
  });
  record({
    measure: 'WER',
    set: `${name}, game voices 8 kHz μ-law (${game.length})`,
    value: pct(corpusWer(gamePhone)),
    bar: '',
  });
  record({
    measure: 'WER',
    set: `${name}, asterisk prompts 8 kHz μ-law (${asterisk.length}, 1 speaker)`,
    value: pct(corpusWer(asteriskPhone)),
    bar: '',
  });
  record({
    measure: 'WER',
    set: `${name}, whole human set 8 kHz μ-law (${game.length + asterisk.length}, ${speakers + 1} speakers)`,
    value: pct(corpusWer([...gamePhone, ...asteriskPhone])),
    bar: '<= 12%',
  });
  record({
    measure: 'real-time factor (CPU s / audio s)',
    set: `${name}, game voices 8 kHz μ-law, ${audioSeconds.toFixed(0)} s of audio`,
    value: ((cpu.user + cpu.system) / 1e6 / audioSeconds).toFixed(3),
    bar: '',
  });
  for (const actor of [...new Set(game.map((c) => c.voice ?? ''))].sort()) {
    const wide = corpusWer(gameWide.filter((p) => p.voice === actor));
    const phone = corpusWer(gamePhone.filter((p) => p.voice === actor));
    record({
      measure: 'WER 16 kHz / 8 kHz μ-law',
      set: `${name}, game voices, ${actor} (${game.filter((c) => c.voice === actor).length})`,
      value: `${pct(wide)} / ${pct(phone)}`,
      bar: '',
    });
  }
}

/**
 * Resident memory an engine adds once it has read one utterance (its worker threads and models): measured first, before
 * any other engine loads.
 */
async function footprintRow(name: string, make: () => SttEngine, clip: Clip): Promise<void> {
  const before = process.memoryUsage().rss;
  const engine = make();
  const stream = await engine.open({ sampleRate: clip.sampleRate, language: 'en-US' });
  pushAll(stream, clip);
  await stream.finalize();
  await stream.close();
  const added = process.memoryUsage().rss - before;
  await engine.close();
  record({
    measure: 'resident memory added',
    set: `${name}, engine with 2 workers after one utterance`,
    value: `${(added / 2 ** 20).toFixed(0)} MB`,
    bar: '',
  });
}

/** Latency, concurrency and event-loop delay of one engine, as `name` in the table. */
async function realTimeRows(name: string, engine: SttEngine, wide: Clip[]): Promise<void> {
  // Latency: one stream at a time, audio in real time, finalize right at the end of speech.
  const latencies: number[] = [];
  for (const clip of wide.slice(0, 6)) latencies.push(...(await realTime(engine, clip, 1)).latencies);
  record({
    measure: 'end of speech -> final, median',
    set: `${name}, 6 fixtures, 16 kHz, real time`,
    value: `${median(latencies).toFixed(0)} ms`,
    bar: '<= 300 ms',
  });

  // Concurrency: N real-time streams; sustained while every final arrives within 1 s of its end.
  const long: Clip = { text: '', sampleRate: 16000, samples: concatPcm(wide.slice(0, 4).map((c) => c.samples)) };
  let sustained = 0;
  let loopAt8 = NaN;
  for (const count of [2, 4, 8, 12, 16]) {
    const r = await realTime(engine, long, count);
    const worst = Math.max(...r.latencies);
    if (count === 8) loopAt8 = r.loopMaxMs;
    process.stdout.write(
      `  ${name}, ${count} streams: worst final ${worst.toFixed(0)} ms, event loop max ${r.loopMaxMs.toFixed(1)} ms\n`,
    );
    if (worst > 1000) break;
    sustained = count;
  }
  // The event-loop measure is at 8 streams whether or not they kept up.
  if (Number.isNaN(loopAt8)) loopAt8 = (await realTime(engine, long, 8)).loopMaxMs;
  record({
    measure: 'concurrent real-time streams',
    set: `${name}, ${(long.samples.length / 16000).toFixed(1)} s utterances`,
    value: String(sustained),
    bar: '>= 8',
  });
  record({
    measure: 'event-loop delay max, 8 streams',
    set: `${name}, monitorEventLoopDelay`,
    value: `${loopAt8.toFixed(1)} ms`,
    bar: '< 20 ms',
  });
}

async function pocketsphinxRows(wide: Clip[], narrow: Clip[]): Promise<void> {
  if (wide[0])
    await footprintRow('pocketsphinx general', () => new PocketsphinxEngine({ workers: 2, model: 'general' }), wide[0]);
  const engine = new PocketsphinxEngine({ workers: 2 });
  const general = new PocketsphinxEngine({ workers: 2, model: 'general' });
  // BENCH_ONLY=realtime skips the WER sets (they take minutes) and measures latency and load only.
  if (process.env.BENCH_ONLY !== 'realtime') {
    // As a 16 kHz call hears it: the general model, a narrowband caller switched to the telephone variant.
    record({
      measure: 'WER',
      set: `pocketsphinx, fixtures 16 kHz, general LM, narrowband callers on the telephone variant (${wide.length})`,
      value: pct(await werOf(engine, wide)),
      bar: '<= 10%',
    });
    record({
      measure: 'WER',
      set: `pocketsphinx, fixtures 16 kHz, general model for every voice (${wide.length} phrases)`,
      value: pct(await werOf(general, wide)),
      bar: '',
    });
    // kal is an 8 kHz diphone voice: band-limited even in the 16 kHz files.
    const fullBand = wide.filter((c) => c.voice !== 'kal');
    record({
      measure: 'WER',
      set: `pocketsphinx, fixtures 16 kHz without kal, general model (${fullBand.length})`,
      value: pct(await werOf(general, fullBand)),
      bar: '',
    });
    record({
      measure: 'WER',
      set: `pocketsphinx, fixtures 8 kHz μ-law, general model (${narrow.length})`,
      value: pct(await werOf(general, narrow)),
      bar: '',
    });
    record({
      measure: 'WER',
      set: `pocketsphinx, fixtures 8 kHz μ-law, telephone variant (${narrow.length})`,
      value: pct(await werOf(engine, narrow)),
      bar: '<= 20%',
    });
    const { clips, label } = await asteriskSample();
    if (clips.length > 0) {
      record({
        measure: 'WER',
        set: `pocketsphinx, ${label}, general`,
        value: pct(await werOf(general, clips)),
        bar: 'as low as possible',
      });
      record({
        measure: 'WER',
        set: `pocketsphinx, ${label}, telephone variant`,
        value: pct(await werOf(engine, clips)),
        bar: 'as low as possible',
      });
    }
    await humanRows('pocketsphinx', engine);
  }
  if (process.env.BENCH_ONLY !== 'wer') await realTimeRows('pocketsphinx general', general, wide);
  await engine.close();
  await general.close();
}

async function moonshineRows(wide: Clip[], narrow: Clip[], model: MoonshineSize): Promise<void> {
  const name = `moonshine ${model}`;
  if (wide[0] && process.env.BENCH_ENGINES?.startsWith('moonshine'))
    await footprintRow(name, () => new MoonshineEngine({ model, workers: 2 }), wide[0]);
  const engine = new MoonshineEngine({ model });
  if (process.env.BENCH_ONLY === 'hints') {
    await hintRows(model);
  } else if (process.env.BENCH_ONLY === 'wideband') {
    await widebandRows(name, engine);
  } else if (process.env.BENCH_ONLY !== 'realtime') {
    record({
      measure: 'WER',
      set: `${name}, fixtures 16 kHz (${wide.length})`,
      value: pct(await werOf(engine, wide)),
      bar: '<= 10%',
    });
    record({
      measure: 'WER',
      set: `${name}, fixtures 8 kHz μ-law (${narrow.length})`,
      value: pct(await werOf(engine, narrow)),
      bar: '<= 20%',
    });
    const { clips, label } = await asteriskSample();
    if (clips.length > 0)
      record({
        measure: 'WER',
        set: `${name}, ${label}`,
        value: pct(await werOf(engine, clips)),
        bar: 'as low as possible',
      });
    await humanRows(name, engine);
    await hintRows(model);
  }
  if (!['wer', 'hints', 'wideband'].includes(process.env.BENCH_ONLY ?? '')) await realTimeRows(name, engine, wide);
  await engine.close();
}

/**
 * Word errors of one recogniser through each line format a carrier may stream: 8 kHz μ-law (every carrier's
 * narrowband), 16 kHz L16 (Vonage, Plivo, SignalWire) and G.722 (Telnyx, SIP). Sets: the asterisk prompts as Debian
 * ships them in G.722 (a human voice recorded at 16 kHz: its L16 row is the recording as it is, its G.722 row a second
 * coding), the game voices (11,025 Hz recordings) and the flite fixtures (16 kHz).
 */
async function widebandRows(name: string, engine: SttEngine): Promise<void> {
  const formats: Array<[string, LineFormat]> = [
    ['8 kHz μ-law', { codec: 'mulaw', rate: 8000 }],
    ['16 kHz L16', { codec: 'l16le', rate: 16000 }],
    ['G.722', { codec: 'g722', rate: 16000 }],
  ];
  const sample = await asteriskSample();
  const asterisk = sample.clips.flatMap((clip, i) => {
    const file = sample.files[i]?.replace(/\.wav$/, '.g722');
    if (!file || !existsSync(file)) return [];
    return [{ ...clip, samples: g722Decoder().decode(readFileSync(file)), sampleRate: 16000 }];
  });
  const sets: Array<[string, Clip[]]> = [
    [`asterisk prompts recorded in G.722 (${asterisk.length}, 1 speaker)`, asterisk],
    [`game voices (${(await gameVoiceClips()).length}, 11,025 Hz recordings)`, await gameVoiceClips()],
    [
      `flite fixtures (${fixtures().filter((f) => f.sampleRate === 16000).length}, 16 kHz)`,
      await load(fixtures().filter((f) => f.sampleRate === 16000)),
    ],
  ];
  for (const [label, clips] of sets) {
    if (clips.length === 0) continue;
    const values = [];
    for (const [, format] of formats)
      values.push(
        pct(
          await werOf(
            engine,
            clips.map((c) => overLine(c, format)),
          ),
        ),
      );
    record({
      measure: `WER ${formats.map(([n]) => n).join(' / ')}`,
      set: `${name}, ${label}`,
      value: values.join(' / '),
      bar: '',
    });
  }
}

/** Silero VAD at both call rates: speech frames found on the fixtures, music-on-hold frames flagged, time per frame. */
async function vadRows(): Promise<void> {
  const engine = new SileroVadEngine();
  for (const rate of [16000, 8000] as const) {
    let speech = 0;
    let found = 0;
    let frames = 0;
    let ms = 0;
    const timed = async (samples: Int16Array): Promise<Array<[number, number]>> => {
      const t = performance.now();
      const segments = await segmentsOf(await engine.open({ sampleRate: rate }), samples, rate);
      ms += performance.now() - t;
      frames += Math.floor(samples.length / (rate / 50));
      return segments;
    };
    for (const f of fixtures().filter((f) => f.sampleRate === rate)) {
      const signal = concatPcm([silence(500, rate), (await readWavFile(f.path)).samples, silence(500, rate)]);
      const labels = energyLabels(signal, rate);
      const detected = framesInSegments(await timed(signal), labels.length);
      labels.forEach((s, i) => {
        if (!s) return;
        speech++;
        if (detected[i]) found++;
      });
    }
    let music = 0;
    let flagged = 0;
    for (const file of musicOnHoldFiles()) {
      const wav = await readWavFile(file);
      const excerpt = resample(wav.samples.subarray(0, 45 * wav.sampleRate), wav.sampleRate, rate);
      const count = Math.floor(excerpt.length / (rate / 50));
      music += count;
      flagged += framesInSegments(await timed(excerpt), count).filter(Boolean).length;
    }
    record({
      measure: 'VAD speech frames found',
      set: `silero, fixtures ${rate / 1000} kHz (${speech} frames)`,
      value: pct(found / speech),
      bar: '>= 95%',
    });
    record({
      measure: 'VAD music frames flagged',
      set: `silero, music on hold at ${rate / 1000} kHz (${music} frames, 45 s a file)`,
      value: pct(flagged / music),
      bar: '<= 5%',
    });
    record({
      measure: 'VAD time per frame',
      set: `silero, ${rate / 1000} kHz, both sets`,
      value: `${(ms / frames).toFixed(3)} ms`,
      bar: '<= 0.5 ms',
    });
  }
  await engine.close();
}

async function main(): Promise<void> {
  const fx = fixtures();
  const wide = await load(fx.filter((f) => f.sampleRate === 16000));
  const narrow = await load(fx.filter((f) => f.encoding === 'mulaw'));
  const only = process.env.BENCH_ENGINES;
  if (!only || only === 'pocketsphinx') await pocketsphinxRows(wide, narrow);
  for (const model of MOONSHINE_SIZE_NAMES)
    if (!only || only === `moonshine-${model}` || (only === 'moonshine' && model === MOONSHINE_DEFAULTS.model))
      await moonshineRows(wide, narrow, model);
  if ((!only || only === 'vad') && !['wer', 'hints', 'wideband'].includes(process.env.BENCH_ONLY ?? ''))
    await vadRows();

  // Other work on the machine slows the decoders: say how busy it was.
  process.stdout.write(
    `\nload average (1, 5, 15 min) at the end: ${loadavg()
      .map((x) => x.toFixed(1))
      .join(', ')} on ${availableParallelism()} cores\n`,
  );
  const w = [34, 100, 10];
  process.stdout.write(
    `\n${'measure'.padEnd(w[0] ?? 0)} ${'set'.padEnd(w[1] ?? 0)} ${'value'.padEnd(w[2] ?? 0)} bar\n`,
  );
  for (const r of rows)
    process.stdout.write(
      `${r.measure.padEnd(w[0] ?? 0)} ${r.set.padEnd(w[1] ?? 0)} ${r.value.padEnd(w[2] ?? 0)} ${r.bar}\n`,
    );
}

await main();
