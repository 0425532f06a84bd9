import { afterAll, describe, expect, it } from 'vitest';
import { isSttError } from '../../../src/speech/stt/errors.ts';
import { PocketsphinxEngine } from '../../../src/speech/stt/pocketsphinx/engine.ts';
import { corpusWer } from '../../../src/speech/stt/wer.ts';
import type { SttResult, SttStream } from '../../../src/speech/types.ts';
import { frames, PHRASES, voice, type Clip } from './helpers.ts';

const engine = new PocketsphinxEngine({ workers: 2 });
afterAll(() => engine.close());

async function transcribe(stream: SttStream, clip: Clip): Promise<SttResult> {
  for (const f of frames(clip.samples, clip.sampleRate)) stream.push(f);
  return stream.finalize();
}

/** Corpus WER over the clips, decoded as two calls (one per worker) in parallel. */
async function corpus(clips: Clip[], sampleRate: number): Promise<number> {
  const halves = [clips.filter((_, i) => i % 2 === 0), clips.filter((_, i) => i % 2 === 1)];
  const pairs = await Promise.all(
    halves.map(async (half) => {
      const stream = await engine.open({ sampleRate, language: 'en-US' });
      const out = [];
      for (const clip of half) out.push({ reference: clip.text, hypothesis: (await transcribe(stream, clip)).text });
      await stream.close();
      return out;
    }),
  );
  return corpusWer(pairs.flat());
}

describe('pocketsphinx engine', () => {
  it('general model: WER on 16 kHz caller phrases stays within the 10% bar', async () => {
    const clips = PHRASES.flatMap((p) => [voice(p, 'slt'), voice(p, 'rms')]);
    expect(await corpus(clips, 16000)).toBeLessThanOrEqual(0.1);
  }, 180_000);

  it('word timings are seconds from the start of the stream and keep counting across utterances', async () => {
    const stream = await engine.open({ sampleRate: 16000, language: 'en-US' });
    const first = voice(PHRASES[1] ?? '');
    const a = await transcribe(stream, first);
    const b = await transcribe(stream, voice(PHRASES[3] ?? ''));
    await stream.close();
    const firstDuration = first.samples.length / 16000;
    const aw = a.words ?? [];
    const bw = b.words ?? [];
    expect(aw.length).toBeGreaterThan(3);
    expect(aw[0]?.start).toBeGreaterThanOrEqual(0);
    expect(aw.at(-1)?.end).toBeLessThanOrEqual(firstDuration + 0.05);
    for (let i = 1; i < aw.length; i++) expect(aw[i]?.start).toBeGreaterThanOrEqual(aw[i - 1]?.start ?? 0);
    expect(bw[0]?.start).toBeGreaterThanOrEqual(firstDuration - 0.05);
    expect(b.text).toBe(bw.map((w) => w.word).join(' '));
  });

  it('emits partial results while audio arrives, before finalize', async () => {
    const partials: string[] = [];
    const stream = await engine.open({ sampleRate: 16000, language: 'en-US', events: { partial: (r) => partials.push(r.text) } });
    const final = await transcribe(stream, voice(PHRASES[0] ?? ''));
    await stream.close();
    expect(partials.length).toBeGreaterThan(1);
    expect(partials.length).toBeLessThan(20); // throttled, not one per frame
    expect(final.text).toContain('tomorrow evening');
  });

  it('cancel drops the current utterance so the next final holds only later speech', async () => {
    const stream = await engine.open({ sampleRate: 16000, language: 'en-US' });
    for (const f of frames(voice(PHRASES[4] ?? '').samples, 16000)) stream.push(f);
    stream.cancel();
    const result = await transcribe(stream, voice(PHRASES[1] ?? ''));
    await stream.close();
    expect(result.text).not.toContain('subscription');
    expect(result.text).toContain('balance');
  });

  it('push never blocks the event loop: three seconds of audio post far faster than they decode', async () => {
    const stream = await engine.open({ sampleRate: 16000, language: 'en-US' });
    const clip = voice(PHRASES[0] ?? '');
    const started = performance.now();
    for (const f of frames(clip.samples, 16000)) stream.push(f);
    const pushMs = performance.now() - started;
    await stream.finalize();
    await stream.close();
    // Decoding these 3 s takes ~1 s of CPU; posting them must cost a small fraction of that.
    expect(pushMs).toBeLessThan(100);
  });

  it('finalize with no audio resolves with an empty transcript', async () => {
    const stream = await engine.open({ sampleRate: 16000, language: 'en-US' });
    expect((await stream.finalize()).text).toBe('');
    await stream.close();
  });

  it('a closed stream refuses audio with STT_STREAM_CLOSED', async () => {
    const stream = await engine.open({ sampleRate: 16000, language: 'en-US' });
    await stream.close();
    expect(() => stream.push(new Int16Array(320))).toThrow(expect.objectContaining({ code: 'STT_STREAM_CLOSED' }));
  });

  it('a rate it cannot take fails with STT_UNSUPPORTED_RATE', async () => {
    await expect(engine.open({ sampleRate: 11025, language: 'en-US' })).rejects.toMatchObject({ code: 'STT_UNSUPPORTED_RATE' });
  });

  it('a crashed worker surfaces STT_ENGINE_CRASHED to the stream user, never hangs, and later streams work', async () => {
    const own = new PocketsphinxEngine({ workers: 1 });
    const errors: string[] = [];
    const stream = await own.open({ sampleRate: 16000, language: 'en-US', events: { error: (e) => errors.push(e.code) } });
    stream.push(voice(PHRASES[0] ?? '').samples);
    own.crashWorkersForTest();
    const failed = await stream.finalize().then(
      () => null,
      (err: unknown) => err,
    );
    expect(isSttError(failed, 'STT_ENGINE_CRASHED')).toBe(true);
    expect(errors).toEqual(['STT_ENGINE_CRASHED']);
    const next = await own.open({ sampleRate: 16000, language: 'en-US' });
    expect((await transcribe(next, voice(PHRASES[1] ?? ''))).text).toContain('balance');
    await next.close();
    await own.close();
  });
});
