// The rules every streaming voice keeps, checked against its stand-in over real sockets: one connection
// per call for all its utterances, audio in the line's coding at the line's rate, word timings in order
// (where the provider gives them), a cut utterance leaving the connection to the next, and provider
// failures as coded errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MediaRate } from '../../../../src/audio/pcm.ts';
import { rms } from '../../../../src/audio/pcm.ts';
import { EgressPolicy } from '../../../../src/net/egress.ts';
import { webSocketOpener, type OpenWebSocket } from '../../../../src/net/websocket.ts';
import { SpeechError } from '../../../../src/speech/errors.ts';
import type { PcmChunk, TtsEngine, TtsUtteranceStream } from '../../../../src/speech/types.ts';
import type { StandInServer } from './common.ts';

export const openLocal: OpenWebSocket = webSocketOpener(new EgressPolicy(['127.0.0.1/32']));

export async function heard(u: TtsUtteranceStream): Promise<PcmChunk[]> {
  const chunks: PcmChunk[] = [];
  for await (const chunk of u.audio()) chunks.push(chunk);
  return chunks;
}

export async function failure(u: TtsUtteranceStream): Promise<SpeechError> {
  try {
    await heard(u);
  } catch (error) {
    if (error instanceof SpeechError) return error;
    throw error;
  }
  throw new Error('the utterance ended without an error');
}

const samplesOf = (chunks: PcmChunk[]) => chunks.reduce((n, c) => n + c.samples.length, 0);

export interface VoiceCase {
  provider: string;
  timesWords: boolean;
  start(apiKey: string): Promise<StandInServer>;
  engine(baseUrl: string, apiKey: string): TtsEngine;
}

export function streamingVoiceRules(c: VoiceCase): void {
  describe(`${c.provider} against its stand-in`, () => {
    const key = 'test-key';
    let standIn: StandInServer;
    beforeAll(async () => {
      standIn = await c.start(key);
    });
    afterAll(async () => {
      await standIn.close();
    });

    for (const rate of [8000, 16000] as MediaRate[]) {
      it(`speaks a call's utterances over one connection, at the line's ${rate} Hz, with ${c.timesWords ? 'each word timed in order' : 'no word times'}`, async () => {
        const before = standIn.connections;
        const session = c.engine(standIn.url, key).openSession!({ sampleRate: rate });
        const first = session.utterance();
        first.write('Hello there');
        first.write('my friend.');
        first.end();
        const second = session.utterance();
        second.write('Goodbye now.');
        second.end();
        const [a, b] = await Promise.all([heard(first), heard(second)]);
        for (const chunks of [a, b]) {
          expect(chunks.every((chunk) => chunk.sampleRate === rate)).toBe(true);
          expect(samplesOf(chunks)).toBeGreaterThan(rate / 10);
          expect(rms(Int16Array.from(chunks.flatMap((chunk) => [...chunk.samples])))).toBeGreaterThan(100);
        }
        if (c.timesWords) {
          expect(first.words?.map((w) => w.word)).toEqual(['Hello', 'there', 'my', 'friend.']);
          const words = first.words!;
          for (let i = 1; i < words.length; i++)
            expect(words[i]!.start).toBeGreaterThanOrEqual(words[i - 1]!.end - 1e-3);
          // The last word ends with the audio.
          expect(words.at(-1)!.end).toBeCloseTo(samplesOf(a) / rate, 1);
        } else {
          expect(first.words).toBeNull();
        }
        await session.close();
        expect(standIn.connections - before).toBe(1);
      });
    }

    it('leaves the connection to the next utterance when one is cut, and that one is heard in full', async () => {
      const before = standIn.connections;
      const session = c.engine(standIn.url, key).openSession!({ sampleRate: 8000 });
      const cut = session.utterance();
      cut.write('one two three four five six seven eight nine ten eleven twelve');
      cut.end();
      const next = session.utterance();
      next.write('Still here.');
      next.end();
      const reading = heard(cut);
      cut.cancel();
      await reading;
      const rest = await heard(next);
      expect(samplesOf(rest)).toBeGreaterThan(800);
      if (c.timesWords) expect(next.words?.map((w) => w.word)).toEqual(['Still', 'here.']);
      await session.close();
      expect(standIn.connections - before).toBe(1);
    });

    it('fails with TTS_PROVIDER_REFUSED when the key is wrong, and says only the status', async () => {
      const session = c.engine(standIn.url, 'wrong-key').openSession!({ sampleRate: 8000 });
      const u = session.utterance();
      u.write('Hello.');
      u.end();
      const error = await failure(u);
      expect(error.code).toBe('TTS_PROVIDER_REFUSED');
      expect(error.message).toContain('401');
      await session.close();
    });

    it('fails the utterance being spoken with TTS_PROVIDER_DISCONNECTED when the provider goes, and reconnects for the next', async () => {
      const session = c.engine(standIn.url, key).openSession!({ sampleRate: 8000 });
      const u = session.utterance();
      u.write('one two three four five six seven eight nine ten');
      u.end();
      // Speaking (its first audio is in), then the provider is gone.
      const reading = (async () => {
        try {
          for await (const _chunk of u.audio()) standIn.drop();
        } catch (error) {
          return error as SpeechError;
        }
        throw new Error('the utterance ended without an error');
      })();
      expect((await reading).code).toBe('TTS_PROVIDER_DISCONNECTED');
      const before = standIn.connections;
      const again = session.utterance();
      again.write('Back again.');
      again.end();
      expect(samplesOf(await heard(again))).toBeGreaterThan(800);
      expect(standIn.connections - before).toBe(1);
      await session.close();
    });

    it('speaks one piece outside a call through synthesize(), resampled to the rate asked for', async () => {
      const chunks: PcmChunk[] = [];
      for await (const chunk of c.engine(standIn.url, key).synthesize('Hello there.', { sampleRate: 24000 }))
        chunks.push(chunk);
      expect(chunks.every((chunk) => chunk.sampleRate === 24000)).toBe(true);
      expect(samplesOf(chunks)).toBeGreaterThan(2400);
    });
  });
}
