import { afterAll, describe, expect, it } from 'vitest';
import { dbfs } from '../../../src/audio/pcm.ts';
import { EspeakTtsEngine } from '../../../src/speech/tts/espeak.ts';
import { collect, durationOf, joined } from './collect.ts';

const engine = new EspeakTtsEngine();
afterAll(() => engine.close());

describe('espeak-ng text-to-speech', () => {
  it('speaks a sentence as audio of plausible duration and a non-silent level, in 20 ms chunks', async () => {
    const chunks = await collect(
      engine.synthesize('I would like to book an appointment for tomorrow.', { sampleRate: 16000 }),
    );
    expect(durationOf(chunks)).toBeGreaterThan(1.5);
    expect(durationOf(chunks)).toBeLessThan(5);
    expect(dbfs(joined(chunks))).toBeGreaterThan(-35);
    expect(chunks.every((c) => c.samples.length === 320 && c.sampleRate === 16000)).toBe(true);
  });

  it('speaks other languages by voice name', async () => {
    const chunks = await collect(
      engine.synthesize('Bonjour, je voudrais un rendez-vous.', { sampleRate: 8000, voiceId: 'fr' }),
    );
    expect(durationOf(chunks)).toBeGreaterThan(1);
  });

  it('stops output within one frame of a cancel', async () => {
    const controller = new AbortController();
    const iterator = engine
      .synthesize('Thank you for calling. Our opening hours are nine to five, Monday to Friday.', {
        sampleRate: 16000,
        signal: controller.signal,
      })
      [Symbol.asyncIterator]();
    expect((await iterator.next()).done).toBe(false);
    controller.abort();
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });

  it('rejects an unknown voice with TTS_VOICE_UNKNOWN, and an option-like name before spawning', async () => {
    await expect(collect(engine.synthesize('Hello.', { sampleRate: 16000, voiceId: 'xx-nope' }))).rejects.toMatchObject(
      { code: 'TTS_VOICE_UNKNOWN' },
    );
    await expect(collect(engine.synthesize('Hello.', { sampleRate: 16000, voiceId: '--help' }))).rejects.toMatchObject({
      code: 'TTS_VOICE_UNKNOWN',
    });
  });

  it('reports a missing binary as TTS_ENGINE_UNAVAILABLE', async () => {
    const broken = new EspeakTtsEngine({ binary: '/nonexistent/espeak-ng', prespawn: false });
    await expect(collect(broken.synthesize('Hello.', { sampleRate: 16000 }))).rejects.toMatchObject({
      code: 'TTS_ENGINE_UNAVAILABLE',
    });
    await broken.close();
  });
});
