import { afterAll, describe, expect, it } from 'vitest';
import { isSttError } from '../../../src/speech/stt/errors.ts';
import { PocketsphinxEngine } from '../../../src/speech/stt/pocketsphinx/engine.ts';
import { corpusWer, wer } from '../../../bench/wer.ts';
import type { SttResult, SttStream } from '../../../src/speech/types.ts';
import { fixtureClips, frames, PHRASES, voice, type Clip } from './helpers.ts';

const engine = new PocketsphinxEngine({ workers: 2 });
afterAll(() => engine.close());

async function transcribe(stream: SttStream, clip: Clip): Promise<SttResult> {
  for (const f of frames(clip.samples, clip.sampleRate)) stream.push(f);
  return stream.finalize();
}

/** Corpus WER over the clips: each voice is one call (one stream), calls decode in parallel. */
async function corpus(clips: Clip[], sampleRate: number): Promise<number> {
  return corpusWer((await transcripts(engine, clips, sampleRate)).flat());
}

/** Per voice (one stream each), the reference and what the engine heard. */
async function transcripts(
  on: PocketsphinxEngine,
  clips: Clip[],
  sampleRate: number,
): Promise<{ reference: string; hypothesis: string }[][]> {
  const voices = [...new Set(clips.map((c) => c.voice ?? ''))];
  return Promise.all(
    voices.map(async (v) => {
      const stream = await on.open({ sampleRate, language: 'en-US' });
      const out = [];
      for (const clip of clips.filter((c) => (c.voice ?? '') === v)) {
        out.push({ reference: clip.text, hypothesis: (await transcribe(stream, clip)).text });
      }
      await stream.close();
      return out;
    }),
  );
}

/**
 * The 16 kHz fixture phrases as the default engine hears them, per voice, decoded once for the file:
 * the WER bar and the narrowband-switch test judge the same transcripts.
 */
let widebandHeard: Promise<{ reference: string; hypothesis: string }[][]> | undefined;
const wideband = async () =>
  (widebandHeard ??= fixtureClips('pcm16').then((clips) => transcripts(engine, clips, 16000)));
/** One voice's share of `wideband()` (transcripts() groups the voices in order of their first clip). */
async function widebandOf(who: string, clips: Clip[]) {
  const voices = [...new Set(clips.map((c) => c.voice ?? ''))];
  return (await wideband())[voices.indexOf(who)] ?? [];
}

describe('pocketsphinx engine', () => {
  // The bars are 10% (16 kHz) and 20% (8 kHz μ-law). Measured on the fixtures (bench/speech.ts):
  // 12.8% at 16 kHz, the narrowband voice kal switched to the telephone variant (the 16 kHz guard
  // is today's level, not the bar), and 13.5% with the telephone variant's channel transform
  // (media/models/en-us-telephone.mllr), so the 8 kHz guard is the bar itself.
  it('general LM: WER on the 16 kHz fixture phrases does not regress above 14% (bar 10%, not met)', async () => {
    expect(corpusWer((await wideband()).flat())).toBeLessThanOrEqual(0.14);
  }, 120_000);

  it('a 16 kHz caller whose speech is narrowband is heard by the telephone variant, a wideband caller by the general model', async () => {
    const telephoneOnly = new PocketsphinxEngine({ workers: 1, model: 'telephone' });
    const generalOnly = new PocketsphinxEngine({ workers: 1, model: 'general' });
    try {
      const clips = await fixtureClips('pcm16');
      // kal is flite's 8 kHz voice: its 16 kHz files hold nothing above 4 kHz. rms is wideband.
      const heard = async (on: PocketsphinxEngine, who: string) =>
        (
          await transcripts(
            on,
            clips.filter((c) => c.voice === who),
            16000,
          )
        ).flat();
      const kal = await widebandOf('kal', clips);
      expect(kal.length).toBeGreaterThan(0);
      expect(kal).toEqual(await heard(telephoneOnly, 'kal'));
      expect(kal).not.toEqual(await heard(generalOnly, 'kal'));
      expect(await widebandOf('rms', clips)).toEqual(await heard(generalOnly, 'rms'));
    } finally {
      await Promise.all([telephoneOnly.close(), generalOnly.close()]);
    }
  }, 120_000);

  it('telephone path: WER on the 8 kHz μ-law fixture phrases is at most 20% (the bar)', async () => {
    expect(await corpus(await fixtureClips('mulaw'), 8000)).toBeLessThanOrEqual(0.2);
  }, 120_000);

  it("every call starts from the model's channel mean: 12 of the 8 kHz phrases, each as a new caller's first sentence, stay within 20% WER", async () => {
    // Decoders are pooled across calls; a caller's first sentence must not depend on who called
    // before, nor be decoded with the wideband prior (that once turned "my name is john smith" into "what").
    // Every other group of four fixtures (three calls per voice, one after another on the pooled
    // decoders): 12.9% here (15.8% on all 24); first sentences heard with the wideband model read 80%.
    const clips = (await fixtureClips('mulaw')).filter((_, i) => Math.floor(i / 4) % 2 === 0);
    const voices = [...new Set(clips.map((c) => c.voice))];
    const byVoice = await Promise.all(
      voices.map(async (v) => {
        const out = [];
        for (const clip of clips.filter((c) => c.voice === v)) {
          const stream = await engine.open({ sampleRate: 8000, language: 'en-US' });
          out.push({ reference: clip.text, hypothesis: (await transcribe(stream, clip)).text });
          await stream.close();
        }
        return out;
      }),
    );
    expect(corpusWer(byVoice.flat())).toBeLessThanOrEqual(0.2);
    expect(byVoice[0]?.[0]).toEqual({ reference: 'my name is john smith', hypothesis: 'my name is john smith' });
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
    const stream = await engine.open({
      sampleRate: 16000,
      language: 'en-US',
      events: { partial: (r) => partials.push(r.text) },
    });
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

  it('phrase hints: a hint the caller says comes out as the hint, even where the general model slips', async () => {
    const said = PHRASES[0] ?? '';
    const stream = await engine.open({
      sampleRate: 16000,
      language: 'en-US',
      phrases: [said, 'transfer me to sales', 'Acme Zyxwvq plan'],
    });
    const result = await transcribe(stream, voice(said));
    await stream.close();
    expect(result.text).toBe(said.toLowerCase());
  }, 60_000);

  it('phrase hints: speech that is no hint comes out as the general model hears it, never forced into a hint', async () => {
    const hints = [PHRASES[1] ?? '', 'yes please', 'no thank you'];
    const stream = await engine.open({ sampleRate: 16000, language: 'en-US', phrases: hints });
    for (const clip of [voice(PHRASES[3] ?? ''), voice(PHRASES[5] ?? '', 'rms')]) {
      const { text } = await transcribe(stream, clip);
      expect(hints).not.toContain(text);
      expect(wer(clip.text, text)).toBeLessThanOrEqual(0.25);
    }
    await stream.close();
  }, 60_000);

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
    await expect(engine.open({ sampleRate: 11025, language: 'en-US' })).rejects.toMatchObject({
      code: 'STT_UNSUPPORTED_RATE',
    });
  });

  it('a crashed worker surfaces STT_ENGINE_CRASHED to the stream user, never hangs, and later streams work', async () => {
    const own = new PocketsphinxEngine({ workers: 1 });
    const errors: string[] = [];
    const stream = await own.open({
      sampleRate: 16000,
      language: 'en-US',
      events: { error: (e) => errors.push(e.code) },
    });
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
