import { afterAll, describe, expect, it } from 'vitest';
import { dbfs } from '../../../src/audio/pcm.ts';
import { SpeechError } from '../../../src/speech/errors.ts';
import { FliteTtsEngine } from '../../../src/speech/tts/flite.ts';
import { collect, durationOf, joined } from './collect.ts';

const engine = new FliteTtsEngine({ voice: 'slt' });
afterAll(() => engine.close());

describe('flite text-to-speech', () => {
  it('speaks a sentence as audio of plausible duration and a non-silent level', async () => {
    const chunks = await collect(engine.synthesize('I would like to book an appointment for tomorrow.', { sampleRate: 16000 }));
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
    const iterator = engine.synthesize('Thank you for calling. Our opening hours are nine to five, Monday to Friday.', {
      sampleRate: 16000,
      signal: controller.signal,
    })[Symbol.asyncIterator]();
    const first = await iterator.next();
    expect(first.done).toBe(false);
    controller.abort();
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });

  it('ends at once when cancelled while a piece is still being synthesised', async () => {
    const controller = new AbortController();
    const iterator = engine.synthesize('This sentence is being synthesised right now.', { sampleRate: 16000, signal: controller.signal })[
      Symbol.asyncIterator
    ]();
    const pending = iterator.next();
    controller.abort();
    expect(await pending).toEqual({ done: true, value: undefined });
  });

  it('gives nothing for blank text or an already aborted signal', async () => {
    expect(await collect(engine.synthesize('   ', { sampleRate: 16000 }))).toEqual([]);
    expect(await collect(engine.synthesize('Hello there.', { sampleRate: 16000, signal: AbortSignal.abort() }))).toEqual([]);
  });

  it('rejects an unknown voice with TTS_VOICE_UNKNOWN', async () => {
    await expect(collect(engine.synthesize('Hi there.', { sampleRate: 16000, voiceId: 'nope' }))).rejects.toMatchObject({
      code: 'TTS_VOICE_UNKNOWN',
    });
  });

  it('reports a missing flite addon as TTS_ADDON_MISSING instead of speaking with something else', async () => {
    const broken = new FliteTtsEngine({ addonPath: '/nonexistent/flite.node' });
    const failure = collect(broken.synthesize('Hello there.', { sampleRate: 16000 }));
    await expect(failure).rejects.toBeInstanceOf(SpeechError);
    await expect(failure).rejects.toMatchObject({ code: 'TTS_ADDON_MISSING' });
    await broken.close();
  });
});
