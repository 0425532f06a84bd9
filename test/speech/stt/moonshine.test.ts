import { spawnSync } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it, vi, type MockInstance } from 'vitest';
import { concatPcm } from '../../../src/audio/pcm.ts';
import { resample } from '../../../src/audio/resampler.ts';
import { readWavFile } from '../../../src/audio/wav.ts';
import { isSttError } from '../../../src/speech/stt/errors.ts';
import {
  MOONSHINE_DEFAULTS,
  MoonshineEngine,
  moonshineModelDir,
  windowBounds,
} from '../../../src/speech/stt/moonshine/engine.ts';
import type { FromMoonshineWorker, ToMoonshineWorker } from '../../../src/speech/stt/moonshine/protocol.ts';
import { MOONSHINE_MODEL, MoonshineRecogniser, trimSilence } from '../../../src/speech/stt/moonshine/recogniser.ts';
import { corpusWer, normalizeWords, wer } from '../../../bench/wer.ts';
import type { SttResult, SttStream } from '../../../src/speech/types.ts';
import { asteriskPrompts } from '../../support/test-sets.ts';
import { PHRASES, fixtureClips, frames, telephone, voice, type Clip } from './helpers.ts';

const engine = new MoonshineEngine({ workers: 2 });
afterAll(() => engine.close());

/**
 * Spies on the engine's readings, noting each one's length as asked: the samples go to a worker, and their buffer with
 * them.
 */
function watchReads() {
  const lengths: number[] = [];
  const transcribe = engine.transcribe.bind(engine);
  const reads = vi
    .spyOn(engine, 'transcribe')
    .mockImplementation(
      (samples, rate, signal, phrases) => (lengths.push(samples.length), transcribe(samples, rate, signal, phrases)),
    );
  return { reads, lengths };
}

/**
 * Ends the turn and checks the stream read the engine only the once it had already, and heard the clip; then lets go of
 * the spy and the stream.
 */
async function finalizeReadOnce(stream: SttStream, reads: MockInstance, clip: Clip): Promise<string> {
  const { text } = await stream.finalize();
  expect(reads).toHaveBeenCalledTimes(1);
  expect(wer(clip.text, text)).toBeLessThanOrEqual(0.2);
  reads.mockRestore();
  await stream.close();
  return text;
}

/** A 16 kHz stream, which reads on request, and the partial results it gives. */
async function streamReadOnRequest(): Promise<{
  stream: SttStream & Required<Pick<SttStream, 'readNow'>>;
  partials: string[];
}> {
  const partials: string[] = [];
  const stream = await engine.open({
    sampleRate: 16000,
    language: 'en-US',
    events: { partial: (r) => partials.push(r.text) },
  });
  if (!readsOnRequest(stream)) throw new Error('a Moonshine stream reads on request');
  return { stream, partials };
}

function readsOnRequest(stream: SttStream): stream is SttStream & Required<Pick<SttStream, 'readNow'>> {
  return stream.readNow !== undefined;
}

/** The clip without the quiet around its speech. */
const speechOf = (clip: Clip): Clip => ({ ...clip, samples: trimSilence(clip.samples, 320, 0) });

async function transcribe(stream: SttStream, clip: Clip): Promise<SttResult> {
  for (const f of frames(clip.samples, clip.sampleRate)) stream.push(f);
  return stream.finalize();
}

async function corpus(clips: Clip[], reader: MoonshineEngine = engine): Promise<number> {
  const pairs = await Promise.all(
    clips.map(async (clip) => {
      const stream = await reader.open({ sampleRate: clip.sampleRate, language: 'en-US' });
      const { text } = await transcribe(stream, clip);
      await stream.close();
      return { reference: clip.text, hypothesis: text };
    }),
  );
  return corpusWer(pairs);
}

function concat(clips: Clip[], gapSamples: number): Int16Array {
  const out = new Int16Array(clips.reduce((n, c) => n + c.samples.length + gapSamples, 0));
  let at = 0;
  for (const c of clips) {
    out.set(c.samples, at);
    at += c.samples.length + gapSamples;
  }
  return out;
}

describe('moonshine engine', () => {
  // Measured by bench/speech.ts: 8.3% on the 16 kHz fixtures and 15.0% on the 8 kHz μ-law ones.
  it('WER on the 16 kHz fixture phrases is at most 10% (the bar)', async () => {
    expect(await corpus(await fixtureClips('pcm16'))).toBeLessThanOrEqual(0.1);
  }, 120_000);

  it('telephone path: WER on the 8 kHz μ-law fixture phrases is at most 20% (the bar)', async () => {
    expect(await corpus(await fixtureClips('mulaw'))).toBeLessThanOrEqual(0.2);
  }, 120_000);

  // bench:speech: base 6.0% on these against tiny's 15.8%, and 7.2% against 10.6% on the human set.
  // Half of them (every other group of four fixtures, three per voice): base reads 6.3% of these,
  // tiny 23.8%, so the 10% bar still tells the two apart.
  it('stt.model base reads the telephone fixtures better than tiny: WER at most 10% on 12 of them where tiny is held to 20%', async () => {
    const base = new MoonshineEngine({ model: 'base', workers: 1 });
    try {
      expect(base.model).toBe('base');
      const clips = (await fixtureClips('mulaw')).filter((_, i) => Math.floor(i / 4) % 2 === 1);
      expect(await corpus(clips, base)).toBeLessThanOrEqual(0.1);
    } finally {
      await base.close();
    }
  }, 120_000);

  // Sampled among the prompts of at most 20 words: one 73 s prompt once outweighed the other 39 in
  // words (6.1% over 389 words, half the reading time); long audio is the window test's. These 40
  // (72 s, 149 words) read 13.6%; read at the wrong rate or as silence, 100% and more.
  it('hears recorded human telephone prompts: WER on 40 of them stays within 25% (pocketsphinx: ~50%)', async () => {
    const prompts = asteriskPrompts()
      .filter((p) => p.text.split(/\s+/).length <= 20)
      .sort((a, b) => a.id.localeCompare(b.id));
    expect(prompts.length).toBeGreaterThan(100);
    const step = Math.floor(prompts.length / 40);
    const sample = prompts.filter((_, i) => i % step === 0).slice(0, 40);
    const clips = await Promise.all(sample.map(async (p) => ({ text: p.text, ...(await readWavFile(p.file)) })));
    expect(await corpus(clips)).toBeLessThanOrEqual(0.25);
  }, 120_000);

  it('an utterance longer than one model window is cut at quiet points and read whole', async () => {
    const clips = (await fixtureClips('pcm16')).filter((c) => c.voice === 'rms' || c.voice === 'awb');
    const rate = clips[0]?.sampleRate ?? 16000;
    const samples = concat(clips, rate / 2);
    expect(samples.length / rate).toBeGreaterThan(20);
    const stream = await engine.open({ sampleRate: rate, language: 'en-US' });
    const { text } = await transcribe(stream, { text: '', samples, sampleRate: rate });
    expect(wer(clips.map((c) => c.text).join(' '), text)).toBeLessThanOrEqual(0.2);
  }, 60_000);

  it('two seconds of line silence before a phrase do not silence it (the model alone ends at once on them)', async () => {
    const clip = (await fixtureClips('mulaw')).find((c) => c.text === 'i want to cancel my order')!;
    const padded = new Int16Array(clip.sampleRate * 2 + clip.samples.length);
    padded.set(clip.samples, clip.sampleRate * 2);
    const stream = await engine.open({ sampleRate: clip.sampleRate, language: 'en-US' });
    expect(wer(clip.text, (await transcribe(stream, { ...clip, samples: padded })).text)).toBeLessThanOrEqual(0.2);
    await stream.close();
  }, 60_000);

  it('decoding falls back to the beam only when greedy picked a token under the threshold; width 1 never does', async () => {
    const recogniser = await MoonshineRecogniser.load(moonshineModelDir('tiny'), 'tiny');
    try {
      const clip = (await fixtureClips('pcm16'))[0]!;
      const never = await recogniser.transcribeDetailed(clip.samples, {
        beamWidth: 3,
        fallbackBelowLogProb: -Infinity,
      });
      const always = await recogniser.transcribeDetailed(clip.samples, {
        beamWidth: 3,
        fallbackBelowLogProb: Infinity,
      });
      const greedy = await recogniser.transcribeDetailed(clip.samples, {
        beamWidth: 1,
        fallbackBelowLogProb: Infinity,
      });
      expect([never.beam, always.beam, greedy.beam]).toEqual([false, true, false]);
      expect(never.worstTokenLogProb).toBeLessThanOrEqual(0);
      expect(greedy.text).toBe(never.text);
      expect(wer(clip.text, always.text)).toBeLessThanOrEqual(0.2);
    } finally {
      await recogniser.close();
    }
  }, 60_000);

  it('the same samples read twice give the same text: the array handed in is the caller’s still (a handed-over one hung)', async () => {
    const clip = telephone(voice('I would like to check my order.', 'slt'));
    await engine.open({ sampleRate: 8000, language: 'en-US' });
    const first = await engine.transcribe(clip.samples, 8000);
    expect(clip.samples.length).toBeGreaterThan(0);
    expect(await engine.transcribe(clip.samples, 8000)).toBe(first);
    expect(wer('i would like to check my order', first)).toBeLessThanOrEqual(0.2);
  }, 30_000);

  it('a reading whose signal fires stops at the next step of the model with STT_ABORTED; unaborted, the same reading gives its text', async () => {
    const recogniser = await MoonshineRecogniser.load(moonshineModelDir('tiny'), 'tiny');
    try {
      const clip = telephone(
        voice('My callback number is five five five, two one eight, four four three nine.', 'kal'),
      );
      const pcm16k = resample(clip.samples, 8000, 16000);
      const beam = { beamWidth: 3, fallbackBelowLogProb: Infinity };
      expect(await recogniser.transcribe(pcm16k, beam)).toMatch(/555/);
      const controller = new AbortController();
      // Each model run starts from setImmediate, so a timer fires between two of them.
      setTimeout(() => controller.abort(), 0);
      await expect(recogniser.transcribe(pcm16k, beam, undefined, controller.signal)).rejects.toSatisfy(
        (err: unknown) => isSttError(err, 'STT_ABORTED'),
      );
    } finally {
      await recogniser.close();
    }
  }, 60_000);

  it('a reading given up while a thread reads it is stopped there: the thread answers STT_ABORTED, not the text, and reads the next', async () => {
    const one = new MoonshineEngine({ workers: 1 });
    const posted = vi.spyOn(Worker.prototype, 'postMessage');
    try {
      await one.open({ sampleRate: 8000, language: 'en-US' });
      const long = telephone(
        voice('My callback number is five five five, two one eight, four four three nine.', 'kal'),
      );
      const controller = new AbortController();
      const given = one.transcribe(long.samples, 8000, controller.signal);
      const handed = posted.mock.calls.findIndex(([msg]) => (msg as ToMoonshineWorker).type === 'transcribe');
      const thread = posted.mock.contexts[handed] as Worker;
      const answers: FromMoonshineWorker[] = [];
      thread.on('message', (msg: FromMoonshineWorker) => answers.push(msg));
      controller.abort();
      await expect(given).rejects.toSatisfy((err: unknown) => isSttError(err, 'STT_ABORTED'));
      expect(posted.mock.calls.map(([msg]) => (msg as ToMoonshineWorker).type)).toEqual(['transcribe', 'cancel']);
      const short = telephone(voice('yes please', 'kal'));
      expect(wer(short.text, await one.transcribe(short.samples, 8000))).toBeLessThanOrEqual(0.5);
      expect(answers.map((a) => (a.type === 'error' ? a.code : a.type))).toEqual(['STT_ABORTED', 'result']);
    } finally {
      posted.mockRestore();
      await one.close();
    }
  }, 60_000);

  it('phrase hints bring rare names into the text on both paths, and change nothing where none is said', async () => {
    const hints = ['Okonkwo', 'Zendrix Telecom'];
    const read = async (clip: Clip, phrases: string[]) => {
      const stream = await engine.open({ sampleRate: clip.sampleRate, language: 'en-US', phrases });
      const { text } = await transcribe(stream, clip);
      await stream.close();
      return text;
    };
    for (const [text, name] of [
      ['I would like to speak with Doctor Okonkwo please', 'Okonkwo'],
      ['My account is with Zendrix Telecom', 'Zendrix Telecom'],
    ] as const) {
      for (const clip of [voice(text, 'slt'), telephone(voice(text, 'rms'))]) {
        // Without the hint the model spells the name as it sounds (Akon Kaplees, Zendrik's telecon).
        expect(await read(clip, [])).not.toContain(name);
        expect(await read(clip, hints)).toContain(name);
      }
    }
    const plain = voice(PHRASES[0] ?? '', 'slt');
    expect(await read(plain, hints)).toBe(await read(plain, []));
  }, 60_000);

  it('trimming keeps the speech with its margins and leaves nothing of pure silence', () => {
    const samples = new Int16Array(16000 * 3);
    samples.fill(3000, 16000, 24000); // 0.5 s of "speech" at 1.0–1.5 s
    const trimmed = trimSilence(samples);
    expect(trimmed.byteOffset / 2).toBe(16000 - MOONSHINE_MODEL.trimMarginSamples);
    expect(trimmed.length).toBe(8000 + 2 * MOONSHINE_MODEL.trimMarginSamples);
    expect(trimSilence(new Int16Array(16000)).length).toBe(0);
  });

  it('window cuts: none under one window; otherwise each window is at most that long and ends in its quietest frame', () => {
    const rate = 8000;
    const loud = (n: number) => Int16Array.from({ length: n }, (_, i) => (i % 2 ? 8000 : -8000));
    expect(windowBounds(loud(rate * 19), rate)).toEqual([]);
    // 45 s of tone with silent 100 ms gaps at 17 s and 35 s.
    const samples = loud(rate * 45);
    for (const at of [17, 35]) samples.fill(0, at * rate, at * rate + rate / 10);
    const cuts = windowBounds(samples, rate);
    expect(cuts).toHaveLength(2);
    expect(cuts[0]! / rate).toBeGreaterThanOrEqual(17);
    expect(cuts[0]! / rate).toBeLessThanOrEqual(17.1);
    expect(cuts[1]! / rate).toBeGreaterThanOrEqual(35);
    expect(cuts[1]! / rate).toBeLessThanOrEqual(35.1);
  });

  it('a pause starts reading the words so far: they come out as a partial, and a finalize after the pause reads nothing more', async () => {
    const clip = (await fixtureClips('pcm16')).find((c) => c.voice === 'slt')!;
    const partials: string[] = [];
    let partialSeen: () => void = () => undefined;
    const seen = new Promise<void>((resolve) => (partialSeen = resolve));
    const stream = await engine.open({
      sampleRate: 16000,
      language: 'en-US',
      events: { partial: (r) => (partials.push(r.text), partialSeen()) },
    });
    const reads = vi.spyOn(engine, 'transcribe');
    for (const f of frames(concat([clip], 16000 / 2), 16000)) stream.push(f);
    await seen;
    expect(reads).toHaveBeenCalledTimes(1);
    const text = await finalizeReadOnce(stream, reads, clip);
    expect(text).toBe(partials[0]);
  }, 60_000);

  it("the call's VAD hearing a pause starts the reading at once, with silence after it up to the stream's own pause; that pause then reads nothing more", async () => {
    // Its speech only: the stream's own ear must not have found a pause yet.
    const clip = speechOf(voice('can I pay with a credit card'));
    const stream = await engine.open({ sampleRate: 16000, language: 'en-US' });
    if (!stream.readNow) throw new Error('a Moonshine stream reads on request');
    const { reads, lengths } = watchReads();
    const quiet = (ms: number) => new Int16Array((16000 * ms) / 1000);
    for (const f of frames(concat([clip], 0), 16000)) stream.push(f);
    for (const f of frames(quiet(100), 16000)) stream.push(f);
    expect(reads).not.toHaveBeenCalled();
    stream.readNow();
    expect(reads).toHaveBeenCalledTimes(1);
    // What came, and silence after it: at most the stream's own 300 ms pause in all (the clip's
    // last quiet frames count toward it).
    expect(lengths[0]).toBeGreaterThan(clip.samples.length + (16000 * 100) / 1000);
    expect(lengths[0]).toBeLessThanOrEqual(clip.samples.length + (16000 * 300) / 1000);
    for (const f of frames(quiet(500), 16000)) stream.push(f);
    stream.readNow();
    await finalizeReadOnce(stream, reads, clip);
  }, 60_000);

  it("glances at 150 ms of quiet: the pause is read as if it lasts, and the VAD's pause after it gets that reading back with no second read", async () => {
    const clip = speechOf(voice('where is your office'));
    const { stream, partials } = await streamReadOnRequest();
    const reads = vi.spyOn(engine, 'transcribe');
    for (const f of frames(concat([clip], 0), 16000)) stream.push(f);
    for (const f of frames(new Int16Array((16000 * MOONSHINE_DEFAULTS.glanceAfterMs) / 1000 + 320), 16000))
      stream.push(f);
    expect(reads).toHaveBeenCalledTimes(1);
    await vi.waitFor(() => expect(partials).toHaveLength(1), { timeout: 10_000 });
    stream.readNow();
    expect(partials).toHaveLength(2);
    expect(partials[1]).toBe(partials[0]);
    expect(reads).toHaveBeenCalledTimes(1);
    expect(wer(clip.text, partials[0]!)).toBeLessThanOrEqual(0.2);
    reads.mockRestore();
    await stream.close();
  }, 60_000);

  it('a reading asked for is given even when the caller speaks on after it: the words up to where it was asked', async () => {
    const first = speechOf(voice('right okay'));
    const then = speechOf(voice('where is your office'));
    const { stream, partials } = await streamReadOnRequest();
    for (const f of frames(first.samples, 16000)) stream.push(f);
    stream.readNow();
    // The caller goes on at once, before the reading can be done, and no pause follows.
    for (const f of frames(then.samples, 16000)) stream.push(f);
    await vi.waitFor(() => expect(partials).toHaveLength(1), { timeout: 20_000 });
    expect(wer(first.text, partials[0]!)).toBeLessThanOrEqual(0.5);
    expect(partials[0]).not.toMatch(/office/i);
    await stream.close();
  }, 60_000);

  it('a reading asked for at an earlier pause is dropped when a later pause asks again: its words, done late, are never taken for all the caller said', async () => {
    const first = speechOf(voice('right okay'));
    const then = speechOf(voice('where is your office'));
    const { stream, partials } = await streamReadOnRequest();
    // The first reading is slow: it is done only when the test says so, unless it is given up first.
    let finishFirst!: (text: string) => void;
    let firstSignal: AbortSignal | undefined;
    const reads = vi.spyOn(engine, 'transcribe').mockImplementationOnce(
      (_samples, _rate, signal) =>
        new Promise<string>((resolve, reject) => {
          finishFirst = resolve;
          firstSignal = signal;
          signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
        }),
    );
    for (const f of frames(first.samples, 16000)) stream.push(f);
    stream.readNow();
    // The caller goes on before that reading is done, then pauses again: the call asks for the words once more.
    for (const f of frames(then.samples, 16000)) stream.push(f);
    stream.readNow();
    expect(firstSignal?.aborted).toBe(true);
    finishFirst('right okay');
    await vi.waitFor(() => expect(partials).toHaveLength(1), { timeout: 20_000 });
    expect(partials[0]).toMatch(/office/i);
    expect(wer(`${first.text} ${then.text}`, partials[0]!)).toBeLessThanOrEqual(0.3);
    reads.mockRestore();
    await stream.close();
  }, 60_000);

  it('a long pause inside a turn is read past: the words after it are not lost (the model alone stops at it)', async () => {
    // kal's number broken off for 0.8 s after its first group: with the pause as said, the model ends its text there
    // ("My mobile is 917."). Pauses inside a reading are shortened to 500 ms (moonshine/pauses.ts).
    const [first, rest] = [
      voice('My mobile is nine one seven', 'kal'),
      voice('five five five, zero one four two.', 'kal'),
    ];
    const samples = concatPcm([first.samples, new Int16Array(first.sampleRate * 0.8), rest.samples]);
    const clip = telephone({ text: `${first.text} ${rest.text}`, samples, sampleRate: first.sampleRate });
    const read = async (reader: MoonshineEngine) => {
      const stream = await reader.open({ sampleRate: clip.sampleRate, language: 'en-US' });
      const { text } = await transcribe(stream, clip);
      await stream.close();
      return normalizeWords(text).join(' ');
    };
    expect(await read(engine)).toBe('my mobile is nine one seven five five five zero one four two');
    const asSaid = new MoonshineEngine({ workers: 1, innerPauseMs: null });
    try {
      expect(await read(asSaid)).toBe('my mobile is nine one seven');
    } finally {
      await asSaid.close();
    }
  }, 60_000);

  it('speech after a pause replaces the reading started there: the final holds the words on both sides', async () => {
    const clips = (await fixtureClips('pcm16')).filter((c) => c.voice === 'rms').slice(0, 2);
    const stream = await engine.open({ sampleRate: 16000, language: 'en-US' });
    for (const f of frames(concat(clips, 16000 / 2), 16000)) stream.push(f);
    const { text } = await stream.finalize();
    expect(wer(clips.map((c) => c.text).join(' '), text)).toBeLessThanOrEqual(0.2);
    await stream.close();
  }, 60_000);

  it('once a piece holds 3 s of speech it is cut off at the next pause and read, so the reading that ends the turn holds only what follows', async () => {
    const clips = (await fixtureClips('pcm16')).filter((c) => c.voice === 'slt' || c.voice === 'awb').slice(0, 5);
    const stream = await engine.open({ sampleRate: 16000, language: 'en-US' });
    const { reads, lengths } = watchReads();
    try {
      const samples = concat(clips, 16000 / 2).subarray(0, -16000 / 2);
      for (const f of frames(samples, 16000)) stream.push(f);
      const { text } = await stream.finalize();
      expect(lengths.length).toBeGreaterThanOrEqual(2);
      expect(lengths.at(-1)).toBeLessThan(samples.length / 2);
      expect(wer(clips.map((c) => c.text).join(' '), text)).toBeLessThanOrEqual(0.2);
    } finally {
      reads.mockRestore();
      await stream.close();
    }
  }, 60_000);

  it('after a pause has been cut, the quiet that ends the turn is not read (the model would hear words in line noise)', async () => {
    const clip = voice('can I pay with a credit card');
    const stream = await engine.open({ sampleRate: 16000, language: 'en-US' });
    const reads = vi.spyOn(engine, 'transcribe');
    const noise = Int16Array.from({ length: 16000 }, (_, i) => ((i * 7919) % 61) - 30);
    for (const f of frames(concat([clip], 0), 16000)) stream.push(f);
    for (const f of frames(noise, 16000)) stream.push(f);
    // The pause was found while it went on: the phrase is already being read…
    expect(reads).toHaveBeenCalledTimes(1);
    // …and the rest of the pause is not.
    await finalizeReadOnce(stream, reads, clip);
  }, 60_000);

  it('finalize with no audio resolves with an empty transcript, and the final event carries each result', async () => {
    const finals: string[] = [];
    const stream = await engine.open({
      sampleRate: 16000,
      language: 'en-US',
      events: { final: (r) => finals.push(r.text) },
    });
    expect(await stream.finalize()).toEqual({ text: '' });
    const clip = voice('please send me an email confirmation');
    const { text } = await transcribe(stream, clip);
    expect(wer(clip.text, text)).toBeLessThanOrEqual(0.2);
    expect(finals).toEqual([text]);
    await stream.close();
  }, 60_000);

  it('cancel drops the current utterance so the next final holds only later speech', async () => {
    const stream = await engine.open({ sampleRate: 16000, language: 'en-US' });
    for (const f of frames(voice('the package arrived damaged yesterday').samples, 16000)) stream.push(f);
    stream.cancel();
    const clip = voice('can I pay with a credit card');
    const { text } = await transcribe(stream, clip);
    expect(wer(clip.text, text)).toBeLessThanOrEqual(0.2);
    expect(text.toLowerCase()).not.toContain('package');
    await stream.close();
  }, 60_000);

  it('cancel during finalize rejects that finalize with STT_ABORTED', async () => {
    const stream = await engine.open({ sampleRate: 16000, language: 'en-US' });
    for (const f of frames(voice('I need to change my delivery address').samples, 16000)) stream.push(f);
    const pending = stream.finalize();
    stream.cancel();
    await expect(pending).rejects.toSatisfy((err: unknown) => isSttError(err, 'STT_ABORTED'));
    await stream.close();
  }, 60_000);

  it('a closed stream refuses audio with STT_STREAM_CLOSED', async () => {
    const stream = await engine.open({ sampleRate: 8000, language: 'en-US' });
    await stream.close();
    expect(() => stream.push(new Int16Array(160))).toThrow(expect.objectContaining({ code: 'STT_STREAM_CLOSED' }));
    await expect(stream.finalize()).rejects.toSatisfy((err: unknown) => isSttError(err, 'STT_STREAM_CLOSED'));
  });

  it('a rate it cannot take fails with STT_UNSUPPORTED_RATE, a language it lacks with STT_CONFIG_INVALID', async () => {
    await expect(engine.open({ sampleRate: 11025, language: 'en-US' })).rejects.toSatisfy((err: unknown) =>
      isSttError(err, 'STT_UNSUPPORTED_RATE'),
    );
    await expect(engine.open({ sampleRate: 16000, language: 'de-DE' })).rejects.toSatisfy((err: unknown) =>
      isSttError(err, 'STT_CONFIG_INVALID'),
    );
  });

  it('a model folder without the model fails open() with STT_MODEL_INVALID every time, never hangs', async () => {
    const broken = new MoonshineEngine({ modelDir: '/nonexistent/moonshine', workers: 1 });
    try {
      for (let i = 0; i < 2; i++) {
        await expect(broken.open({ sampleRate: 16000, language: 'en-US' })).rejects.toSatisfy((err: unknown) =>
          isSttError(err, 'STT_MODEL_INVALID'),
        );
      }
    } finally {
      await broken.close();
    }
  });

  it('after close() the engine starts its workers again on the next open()', async () => {
    const own = new MoonshineEngine({ workers: 1 });
    try {
      await (await own.open({ sampleRate: 16000, language: 'en-US' })).close();
      await own.close();
      const stream = await own.open({ sampleRate: 16000, language: 'en-US' });
      const clip = voice('yes that sounds good to me');
      expect(wer(clip.text, (await transcribe(stream, clip)).text)).toBeLessThanOrEqual(0.2);
    } finally {
      await own.close();
    }
  }, 60_000);
});

describe('moonshine engine close', () => {
  it('closing the engine while utterances are being read or the model loads never aborts the process: workers finish, release the model and exit, never terminated', () => {
    // In a process of its own: an abort would take the test runner with it.
    const child = spawnSync(process.execPath, ['--import', 'tsx', 'test/speech/stt/children/moonshine-close.ts', '3'], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(child.signal, child.stderr).toBeNull();
    expect(child.status, child.stderr).toBe(0);
    expect(child.stdout).toContain('closed every round; workers terminated: 0');
  }, 150_000);
});
