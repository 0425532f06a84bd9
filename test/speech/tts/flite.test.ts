import { basename, dirname } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dbfs } from '../../../src/audio/pcm.ts';
import { SpeechError } from '../../../src/speech/errors.ts';
import { FliteTtsEngine } from '../../../src/speech/tts/flite.ts';
import { FLITE_ADDON_PATH, loadFliteAddon } from '../../../src/speech/tts/flite/addon.ts';
import { FlitePool } from '../../../src/speech/tts/flite/pool.ts';
import { collect, durationOf, joined } from './collect.ts';

// One clause, so it is a single piece: streaming has to happen inside flite, not between pieces.
const LONG_SENTENCE =
  'Our office on the corner of Main Street and Fifth Avenue is open from nine in the morning until half past five in the evening every weekday';

const engine = new FliteTtsEngine({ voice: 'slt' });
afterAll(() => engine.close());

describe('flite text-to-speech', () => {
  it('speaks a sentence as audio of plausible duration and a non-silent level', async () => {
    const chunks = await collect(
      engine.synthesize('I would like to book an appointment for tomorrow.', { sampleRate: 16000 }),
    );
    const seconds = durationOf(chunks);
    expect(seconds).toBeGreaterThan(1.5);
    expect(seconds).toBeLessThan(5);
    expect(dbfs(joined(chunks))).toBeGreaterThan(-35);
  });

  it('delivers 20 ms chunks at the rate the caller asks for, also from the 8 kHz kal voice', async () => {
    const chunks = await collect(engine.synthesize('Goodbye, and thank you.', { sampleRate: 8000, voiceId: 'kal' }));
    expect(chunks.length).toBeGreaterThan(10);
    expect(chunks.every((c) => c.sampleRate === 8000 && c.samples.length === 160)).toBe(true);
    const wide = await collect(engine.synthesize('Goodbye.', { sampleRate: 48000, voiceId: 'rms' }));
    expect(wide.every((c) => c.sampleRate === 48000 && c.samples.length === 960)).toBe(true);
  });

  it('speaks faster at speed 2', async () => {
    const text = 'Can you transfer me to billing please';
    const normal = durationOf(await collect(engine.synthesize(text, { sampleRate: 16000 })));
    const fast = durationOf(await collect(engine.synthesize(text, { sampleRate: 16000, speed: 2 })));
    expect(fast).toBeLessThan(normal * 0.7);
  });

  it('stops output within one frame of a cancel: no chunk comes after the abort', async () => {
    const controller = new AbortController();
    const iterator = engine
      .synthesize('Thank you for calling. Our opening hours are nine to five, Monday to Friday.', {
        sampleRate: 16000,
        signal: controller.signal,
      })
      [Symbol.asyncIterator]();
    const first = await iterator.next();
    expect(first.done).toBe(false);
    controller.abort();
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });

  it('ends at once when cancelled while a piece is still being synthesised', async () => {
    const controller = new AbortController();
    const iterator = engine
      .synthesize('This sentence is being synthesised right now.', { sampleRate: 16000, signal: controller.signal })
      [Symbol.asyncIterator]();
    const pending = iterator.next();
    controller.abort();
    expect(await pending).toEqual({ done: true, value: undefined });
  });

  it('gives nothing for blank text or an already aborted signal', async () => {
    expect(await collect(engine.synthesize('   ', { sampleRate: 16000 }))).toEqual([]);
    expect(
      await collect(engine.synthesize('Hello there.', { sampleRate: 16000, signal: AbortSignal.abort() })),
    ).toEqual([]);
  });

  it('rejects an unknown voice with TTS_VOICE_UNKNOWN', async () => {
    await expect(collect(engine.synthesize('Hi there.', { sampleRate: 16000, voiceId: 'nope' }))).rejects.toMatchObject(
      {
        code: 'TTS_VOICE_UNKNOWN',
      },
    );
  });

  it('reports a missing flite addon as TTS_ADDON_MISSING instead of speaking with something else', async () => {
    const broken = new FliteTtsEngine({ addonPath: '/nonexistent/flite.node' });
    const failure = collect(broken.synthesize('Hello there.', { sampleRate: 16000 }));
    await expect(failure).rejects.toBeInstanceOf(SpeechError);
    await expect(failure).rejects.toMatchObject({ code: 'TTS_ADDON_MISSING' });
    await broken.close();
  });

  it('rejects an unknown voice at construction with TTS_VOICE_UNKNOWN', () => {
    expect(() => new FliteTtsEngine({ voice: 'nope' })).toThrow(expect.objectContaining({ code: 'TTS_VOICE_UNKNOWN' }));
  });

  it('cancel mid-sentence yields nothing more, and the next sentence gets only its own audio', async () => {
    const controller = new AbortController();
    const iterator = engine
      .synthesize(LONG_SENTENCE, { sampleRate: 16000, voiceId: 'kal16', signal: controller.signal })
      [Symbol.asyncIterator]();
    expect((await iterator.next()).done).toBe(false);
    controller.abort();
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
    // kal16 is a diphone voice with no randomness: the same text gives the same samples, so any
    // leftover block of the cancelled sentence would show up as a difference.
    const after = joined(
      await collect(engine.synthesize('Goodbye, and thank you.', { sampleRate: 16000, voiceId: 'kal16' })),
    );
    const again = joined(
      await collect(engine.synthesize('Goodbye, and thank you.', { sampleRate: 16000, voiceId: 'kal16' })),
    );
    expect(after).toEqual(again);
  });

  it('concurrent syntheses on the same engine do not mix audio', async () => {
    const texts = [
      'Your appointment is on Tuesday at ten.',
      'Please hold while I transfer you to billing.',
      LONG_SENTENCE,
    ];
    const alone: Int16Array[] = [];
    for (const text of texts)
      alone.push(joined(await collect(engine.synthesize(text, { sampleRate: 16000, voiceId: 'kal16' }))));
    // More at once than there are workers, so some wait in the queue while others speak.
    const together = await Promise.all(
      [...texts, ...texts].map(async (text) =>
        joined(await collect(engine.synthesize(text, { sampleRate: 16000, voiceId: 'kal16' }))),
      ),
    );
    together.forEach((samples, i) => expect(samples).toEqual(alone[i % texts.length]));
    // A clustergen voice dithers its excitation randomly, so compare lengths there.
    const slt = await Promise.all(
      texts.map(async (text) => durationOf(await collect(engine.synthesize(text, { sampleRate: 16000 })))),
    );
    for (const [i, text] of texts.entries())
      expect(durationOf(await collect(engine.synthesize(text, { sampleRate: 16000 })))).toBe(slt[i]);
  });

  it('close() mid-sentence ends the synthesis with TTS_ENGINE_CLOSED and stops its workers without harm', async () => {
    // Another spelling of the addon's path gets workers of its own, which close() then terminates
    // while they are inside flite: that must not abort the process.
    const closing = new FliteTtsEngine({ addonPath: `${dirname(FLITE_ADDON_PATH)}/./${basename(FLITE_ADDON_PATH)}` });
    const iterator = closing
      .synthesize(`${LONG_SENTENCE}. ${LONG_SENTENCE}.`, { sampleRate: 16000 })
      [Symbol.asyncIterator]();
    expect((await iterator.next()).done).toBe(false);
    await closing.close();
    await expect(iterator.next()).rejects.toMatchObject({ code: 'TTS_ENGINE_CLOSED' });
    await expect(collect(closing.synthesize('Hello.', { sampleRate: 16000 }))).rejects.toMatchObject({
      code: 'TTS_ENGINE_CLOSED',
    });
  });

  it('warm() loads a voice ahead of the first sentence, which then speaks normally', async () => {
    engine.warm('rms');
    const chunks = await collect(engine.synthesize('Hello there.', { sampleRate: 16000, voiceId: 'rms' }));
    expect(durationOf(chunks)).toBeGreaterThan(0.4);
  });
});

describe('flite workers', () => {
  it('a worker that goes away mid-sentence fails that synthesis with TTS_SYNTHESIS_FAILED, not the process', async () => {
    const pool = new FlitePool(FLITE_ADDON_PATH, 1);
    // Not cancelled first, unlike engine.close(): the worker is stopped while flite is speaking.
    const failure = await new Promise<SpeechError>((resolve) => {
      let stopping = false;
      pool.submit('slt', `${LONG_SENTENCE} and ${LONG_SENTENCE}`, 1, {
        onAudio: () => {
          if (stopping) return;
          stopping = true;
          void pool.close();
        },
        onDone: () => resolve(new SpeechError('TTS_SYNTHESIS_FAILED', 'finished although its worker was stopped')),
        onError: resolve,
      });
    });
    expect(failure.code).toBe('TTS_SYNTHESIS_FAILED');
    expect(failure.message).toMatch(/worker died/);
  });
});

describe('flite addon', () => {
  const addon = loadFliteAddon();
  const flag = () => new Int32Array(new SharedArrayBuffer(4));

  it('streams: the first block of a long sentence is handed over before its synthesis finishes', () => {
    const blocks: number[] = [];
    expect(addon.synthesize('slt', LONG_SENTENCE, 1, flag(), (samples) => void blocks.push(samples.length))).toBe(true);
    const total = blocks.reduce((a, b) => a + b, 0);
    expect(blocks.length).toBeGreaterThan(5);
    expect(blocks[0]! / 16000).toBeLessThanOrEqual(0.04);
    // Stopping from inside the first block's callback works only if that block came out while
    // the rest of the sentence was still to be made.
    const cancel = flag();
    let heard = 0;
    const completed = addon.synthesize('slt', LONG_SENTENCE, 1, cancel, (samples) => {
      heard += samples.length;
      Atomics.store(cancel, 0, 1);
    });
    expect(completed).toBe(false);
    expect(heard).toBe(blocks[0]);
    expect(heard).toBeLessThan(total / 10);
  });

  it('knows every voice the engine offers and refuses others', () => {
    expect([...addon.voices()].sort()).toEqual(['awb', 'awb_time', 'kal', 'kal16', 'rms', 'slt']);
    expect(addon.loadVoice('nope')).toBe(false);
    expect(() => addon.synthesize('nope', 'Hello.', 1, flag(), () => undefined)).toThrow(/unknown voice/);
  });

  it('stops and rethrows when the audio callback throws', () => {
    expect(() =>
      addon.synthesize('slt', LONG_SENTENCE, 1, flag(), () => {
        throw new Error('consumer failed');
      }),
    ).toThrow('consumer failed');
  });
});
