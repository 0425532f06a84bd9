// The Deepgram recogniser against a stand-in speaking Deepgram's protocol with real results
// (deepgram/stand-in.ts), and its message schemas against the examples in Deepgram's documentation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressPolicy } from '../../../src/net/egress.ts';
import { webSocketOpener } from '../../../src/net/websocket.ts';
import { DeepgramSttEngine } from '../../../src/speech/stt/deepgram/engine.ts';
import {
  DeepgramControlSchema,
  DeepgramMessageSchema,
  DeepgramResultsSchema,
} from '../../../src/speech/stt/deepgram/protocol.ts';
import { isSttError } from '../../../src/speech/stt/errors.ts';
import type { SttResult, SttStreamOptions, SttTurnEnd } from '../../../src/speech/types.ts';
import { startDeepgramStandIn, type DeepgramStandIn } from './deepgram/stand-in.ts';
import { frames, telephone, voice } from './helpers.ts';

const KEY = 'dg-test-key';
let standIn: DeepgramStandIn;
const openWebSocket = webSocketOpener(new EgressPolicy(['127.0.0.0/8']));

beforeAll(async () => {
  standIn = await startDeepgramStandIn(KEY);
});
afterAll(async () => standIn?.close());

// The stand-in's recogniser starts cold: its first reading may take seconds on a busy machine.
const engine = (apiKey = KEY) =>
  new DeepgramSttEngine({ apiKey, baseUrl: standIn.url, openWebSocket, finalGraceMs: 15_000 });

/** A phrase said, then silence, 20 ms a frame in real time order (no waits: the stand-in reads as fast as it can). */
function say(push: (f: Int16Array) => void, samples: Int16Array, rate: number, silenceMs = 700): void {
  for (const f of frames(samples, rate)) push(f.slice());
  for (const f of frames(new Int16Array((rate * silenceMs) / 1000), rate)) push(f.slice());
}

describe("Deepgram's documented messages", () => {
  it("parse with the stream's schemas: a Results sample, the UtteranceEnd, Finalize and CloseStream examples", () => {
    // Results as Deepgram sends it (a live sample: the fields of the Results reference).
    const results = DeepgramResultsSchema.parse({
      type: 'Results',
      channel_index: [0, 1],
      duration: 1.98,
      start: 5.99,
      is_final: true,
      speech_final: true,
      channel: {
        alternatives: [
          {
            transcript: 'Tell me more about this.',
            confidence: 0.99964225,
            words: [
              { word: 'tell', start: 6.0699997, end: 6.3499994, confidence: 0.99782443, punctuated_word: 'Tell' },
              { word: 'me', start: 6.3499994, end: 6.6299996, confidence: 0.9998324, punctuated_word: 'me' },
            ],
          },
        ],
      },
      metadata: {
        request_id: '52cc0efe-fa77-4aa7-b79c-0dda09de2f14',
        model_info: { name: '2-general-nova', version: '2024-01-18.26916', arch: 'nova-2' },
        model_uuid: 'c0d1a568-ce81-4fea-97e7-bd45cb1fdf3c',
      },
      from_finalize: false,
    });
    expect(results.channel.alternatives[0]!.words[0]!.punctuated_word).toBe('Tell');
    // The UtteranceEnd documentation's example.
    expect(DeepgramMessageSchema.parse({ channel: [0, 1], last_word_end: 2.395, type: 'UtteranceEnd' })).toMatchObject({
      type: 'UtteranceEnd',
    });
    // CloseStream's answer, from its documentation.
    expect(
      DeepgramMessageSchema.parse({
        type: 'Metadata',
        transaction_key: 'deprecated',
        request_id: '8c8ebea9-dbec-45fa-a035-e4632cb05b5f',
        sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
        created: '2024-08-29T22:37:55.202Z',
        duration: 0.0,
        channels: 0,
      }).type,
    ).toBe('Metadata');
    for (const type of ['KeepAlive', 'Finalize', 'CloseStream'])
      expect(DeepgramControlSchema.parse({ type }).type).toBe(type);
  });
});

describe('Deepgram live stream', () => {
  it('a phone line is sent as μ-law at 8 kHz: interim results, speech_final as an end-of-turn input, and the words at finalize', async () => {
    const partials: string[] = [];
    const turnEnds: SttTurnEnd[] = [];
    const finals: SttResult[] = [];
    const options: SttStreamOptions = {
      sampleRate: 8000,
      lineEncoding: 'mulaw',
      language: 'en-US',
      phrases: ['Okonkwo', 'Zendrix Telecom'],
      events: {
        partial: (r) => partials.push(r.text),
        endOfTurn: (s) => turnEnds.push(s),
        final: (r) => finals.push(r),
      },
    };
    const stream = await engine().open(options);
    const clip = telephone(voice('please transfer me to a human agent'));
    say((f) => stream.push(f), clip.samples, 8000);
    await expect.poll(() => turnEnds.length, { timeout: 45_000 }).toBeGreaterThan(0);
    const result = await stream.finalize();
    expect(result.text.toLowerCase()).toMatch(/human agent/);
    expect(result.words!.length).toBeGreaterThan(3);
    // Word times are seconds of the audio pushed: inside the clip.
    expect(result.words!.at(-1)!.end).toBeLessThanOrEqual(clip.samples.length / 8000 + 0.1);
    expect(turnEnds[0]).toEqual({ confidence: null });
    expect(partials.some((p) => /agent/i.test(p))).toBe(true);
    expect(finals).toEqual([result]);
    await stream.close();

    const connection = standIn.connections.at(-1)!;
    expect(connection.url.searchParams.get('encoding')).toBe('mulaw');
    expect(connection.url.searchParams.get('sample_rate')).toBe('8000');
    expect(connection.url.searchParams.getAll('keyterm')).toEqual(['Okonkwo', 'Zendrix Telecom']);
    expect(connection.url.searchParams.get('interim_results')).toBe('true');
    // One byte a sample: μ-law as the line carried it, not PCM16.
    expect(connection.audioBytes).toBe(clip.samples.length + 8000 * 0.7);
    await expect
      .poll(() => connection.controls.map((c) => c.type).filter((t) => t !== 'KeepAlive'), { timeout: 10_000 })
      .toEqual(['Finalize', 'CloseStream']);
  }, 60_000);

  it('a browser line is sent as linear16 at 16 kHz, and a finalize with nothing new answers at once', async () => {
    const stream = await engine().open({ sampleRate: 16000, language: 'en-US' });
    const clip = voice('what time do you open on saturday');
    say((f) => stream.push(f), clip.samples, 16000, 200);
    const result = await stream.finalize();
    expect(result.text.toLowerCase()).toMatch(/open|saturday|time/);
    expect(await stream.finalize()).toEqual({ text: '' });
    await stream.close();
    const connection = standIn.connections.at(-1)!;
    expect(connection.url.searchParams.get('encoding')).toBe('linear16');
    expect(connection.audioBytes).toBe(2 * (clip.samples.length + 16000 * 0.2));
  }, 60_000);

  it('a wrong key is refused at the upgrade: STT_PROVIDER_REFUSED with the status', async () => {
    const refused = await engine('wrong-key')
      .open({ sampleRate: 8000, language: 'en-US' })
      .catch((e: unknown) => e);
    expect(isSttError(refused, 'STT_PROVIDER_REFUSED')).toBe(true);
    expect((refused as { status: number }).status).toBe(401);
  });

  it('a provider that breaks the stream fails it with a coded error in our words: its short code kept, its text dropped', async () => {
    const errors: (Error & { code: string })[] = [];
    const stream = await engine().open({
      sampleRate: 8000,
      language: 'en-US',
      events: { error: (e) => errors.push(e) },
    });
    stream.push(new Int16Array(160));
    await expect.poll(() => standIn.connections.at(-1)!.audioBytes, { timeout: 10_000 }).toBeGreaterThan(0);
    standIn.breakStreams();
    await expect.poll(() => errors.length, { timeout: 10_000 }).toBe(1);
    expect(errors[0]!.code).toBe('STT_PROVIDER_ERROR');
    expect(errors[0]!.message).toContain('NET-0000');
    expect(errors[0]!.message).not.toMatch(/internal problem|10\.1\.2\.3/);
    await expect(stream.finalize()).rejects.toMatchObject({ code: 'STT_PROVIDER_ERROR' });
    await stream.close();
  });

  it('a stream without audio keeps Deepgram from closing it with KeepAlive messages', async () => {
    const stream = await new DeepgramSttEngine({
      apiKey: KEY,
      baseUrl: standIn.url,
      openWebSocket,
      keepAliveMs: 40,
    }).open({ sampleRate: 8000, language: 'en-US' });
    const connection = standIn.connections.at(-1)!;
    await expect
      .poll(() => connection.controls.filter((c) => c.type === 'KeepAlive').length, { timeout: 10_000 })
      .toBeGreaterThan(1);
    await stream.close();
  });
});
