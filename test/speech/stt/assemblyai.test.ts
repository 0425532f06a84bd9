// The AssemblyAI recogniser against a stand-in speaking AssemblyAI's Universal-Streaming protocol
// with real results (assemblyai/stand-in.ts), and its message schemas against the examples in
// AssemblyAI's documentation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressPolicy } from '../../../src/net/egress.ts';
import { webSocketOpener } from '../../../src/net/websocket.ts';
import { AssemblyAiSttEngine } from '../../../src/speech/stt/assemblyai/engine.ts';
import {
  AssemblyAiControlSchema,
  AssemblyAiErrorSchema,
  AssemblyAiMessageSchema,
} from '../../../src/speech/stt/assemblyai/protocol.ts';
import { isSttError } from '../../../src/speech/stt/errors.ts';
import type { SttResult, SttTurnEnd } from '../../../src/speech/types.ts';
import { startAssemblyAiStandIn, type AssemblyAiStandIn } from './assemblyai/stand-in.ts';
import { frames, telephone, voice } from './helpers.ts';

const KEY = 'aai-test-key';
let standIn: AssemblyAiStandIn;
const openWebSocket = webSocketOpener(new EgressPolicy(['127.0.0.0/8']));

beforeAll(async () => {
  standIn = await startAssemblyAiStandIn(KEY);
});
afterAll(async () => standIn?.close());

// The stand-in's recogniser starts cold: its first reading may take seconds on a busy machine.
const engine = (apiKey = KEY) =>
  new AssemblyAiSttEngine({ apiKey, baseUrl: standIn.url, openWebSocket, finalGraceMs: 15_000 });

function say(push: (f: Int16Array) => void, samples: Int16Array, rate: number, silenceMs: number): void {
  for (const f of frames(samples, rate)) push(f.slice());
  for (const f of frames(new Int16Array((rate * silenceMs) / 1000), rate)) push(f.slice());
}

describe("AssemblyAI's documented messages", () => {
  it("parse with the stream's schemas: Begin, Turns of the message sequence, Termination, Error, and the client's messages", () => {
    expect(
      AssemblyAiMessageSchema.parse({
        type: 'Begin',
        id: 'de5d9927-73a6-4be8-b52d-b4c07be37e6b',
        expires_at: 1759796682,
      }).type,
    ).toBe('Begin');
    const first = AssemblyAiMessageSchema.parse({
      turn_order: 0,
      turn_is_formatted: false,
      end_of_turn: false,
      transcript: '',
      end_of_turn_confidence: 0.017454,
      words: [{ start: 1920, end: 2000, text: 'hi', confidence: 0.874618, word_is_final: false }],
      utterance: '',
      type: 'Turn',
    });
    expect(first).toMatchObject({ type: 'Turn', end_of_turn: false });
    const second = AssemblyAiMessageSchema.parse({
      turn_order: 0,
      turn_is_formatted: false,
      end_of_turn: false,
      transcript: 'hi',
      end_of_turn_confidence: 1.4e-5,
      words: [
        { start: 1920, end: 2000, text: 'hi', confidence: 0.874618, word_is_final: true },
        { start: 2800, end: 2880, text: 'my', confidence: 0.812831, word_is_final: false },
      ],
      utterance: '',
      type: 'Turn',
    });
    expect(second.type === 'Turn' && second.words.map((w) => w.word_is_final)).toEqual([true, false]);
    expect(
      AssemblyAiMessageSchema.parse({ type: 'Termination', audio_duration_seconds: 10, session_duration_seconds: 10 })
        .type,
    ).toBe('Termination');
    expect(
      AssemblyAiErrorSchema.parse({
        type: 'Error',
        error_code: 3008,
        error: 'Session Expired: Maximum session duration exceeded',
      }).error_code,
    ).toBe(3008);
    for (const type of ['ForceEndpoint', 'Terminate']) expect(AssemblyAiControlSchema.parse({ type }).type).toBe(type);
  });
});

describe('AssemblyAI streaming', () => {
  it('a phone line is sent as pcm_mulaw at 8 kHz in messages of 50 ms or more: turns as partials, end_of_turn with its confidence as an end-of-turn input, the formatted turn at finalize', async () => {
    const partials: string[] = [];
    const turnEnds: SttTurnEnd[] = [];
    const finals: SttResult[] = [];
    const stream = await engine().open({
      sampleRate: 8000,
      lineEncoding: 'mulaw',
      language: 'en-US',
      phrases: ['Okonkwo'],
      events: {
        partial: (r) => partials.push(r.text),
        endOfTurn: (s) => turnEnds.push(s),
        final: (r) => finals.push(r),
      },
    });
    const clip = telephone(voice('please transfer me to a human agent'));
    say((f) => stream.push(f), clip.samples, 8000, 700);
    await expect.poll(() => turnEnds.length, { timeout: 45_000 }).toBeGreaterThan(0);
    expect(turnEnds[0]!.confidence).toBeGreaterThan(0.5);
    // AssemblyAI ended the turn itself: finalize answers with it, without a ForceEndpoint.
    const result = await stream.finalize();
    expect(result.text).toMatch(/human agent\.$/i);
    expect(result.words!.length).toBeGreaterThan(3);
    expect(result.words!.at(-1)!.end).toBeLessThanOrEqual(clip.samples.length / 8000 + 0.1);
    expect(partials.some((p) => /agent/i.test(p))).toBe(true);
    expect(finals).toEqual([result]);
    await stream.close();
    const connection = standIn.connections.at(-1)!;
    expect(connection.url.searchParams.get('encoding')).toBe('pcm_mulaw');
    expect(connection.url.searchParams.get('sample_rate')).toBe('8000');
    expect(connection.url.searchParams.get('speech_model')).toBe('universal-streaming-english');
    expect(JSON.parse(connection.url.searchParams.get('keyterms_prompt')!)).toEqual(['Okonkwo']);
    expect(Math.min(...connection.chunkMs)).toBeGreaterThanOrEqual(50);
    await expect.poll(() => connection.controls.map((c) => c.type), { timeout: 10_000 }).toEqual(['Terminate']);
  }, 60_000);

  it("the turn detection's documented timing: a confident turn model ends the turn after min_end_of_turn_silence_when_confident (400 ms), an unsure one after max_turn_silence (1280 ms), its confidence passed on either way", async () => {
    const unsure = await startAssemblyAiStandIn(KEY, { endOfTurnConfidence: 0.2 });
    try {
      for (const [server, confidence, silentMs] of [
        [standIn, 0.8, 400],
        [unsure, 0.2, 1280],
      ] as const) {
        const turnEnds: SttTurnEnd[] = [];
        const stream = await new AssemblyAiSttEngine({
          apiKey: KEY,
          baseUrl: server.url,
          openWebSocket,
          finalGraceMs: 15_000,
        }).open({
          sampleRate: 8000,
          lineEncoding: 'mulaw',
          language: 'en-US',
          events: { endOfTurn: (s) => turnEnds.push(s) },
        });
        say((f) => stream.push(f), telephone(voice('what time do you open')).samples, 8000, 1500);
        await expect.poll(() => turnEnds.length, { timeout: 45_000 }).toBe(1);
        expect(turnEnds[0]!.confidence).toBe(confidence);
        expect(server.connections.at(-1)!.turnEnds).toEqual([{ silentMs, confidence }]);
        await stream.close();
      }
    } finally {
      await unsure.close();
    }
  }, 90_000);

  it('a browser line is sent as pcm_s16le at 16 kHz; finalize mid-turn forces the endpoint', async () => {
    const stream = await engine().open({ sampleRate: 16000, language: 'en-US' });
    const clip = voice('what time do you open on saturday');
    say((f) => stream.push(f), clip.samples, 16000, 100);
    const result = await stream.finalize();
    expect(result.text.toLowerCase()).toMatch(/open|saturday|time/);
    await stream.close();
    const connection = standIn.connections.at(-1)!;
    expect(connection.url.searchParams.get('encoding')).toBe('pcm_s16le');
    expect(connection.controls.map((c) => c.type)).toContain('ForceEndpoint');
  }, 60_000);

  it('an utterance after one the ForceEndpoint ended is asked for again: its words are its own final, not an empty one with them read into the next', async () => {
    const stream = await engine().open({ sampleRate: 16000, language: 'en-US' });
    say((f) => stream.push(f), voice('what time do you open on saturday').samples, 16000, 100);
    expect((await stream.finalize()).text.toLowerCase()).toMatch(/open|saturday|time/);
    // Pushed at once and finalized at once, before any partial of it came back.
    say((f) => stream.push(f), voice('please transfer me to a human agent').samples, 16000, 100);
    const second = await stream.finalize();
    expect(second.text.toLowerCase()).toMatch(/transfer|human|agent/);
    expect(second.text.toLowerCase()).not.toMatch(/saturday/);
    await stream.close();
    expect(standIn.connections.at(-1)!.controls.filter((c) => c.type === 'ForceEndpoint')).toHaveLength(2);
  }, 60_000);

  it('a wrong key is refused at the upgrade: STT_PROVIDER_REFUSED with the status', async () => {
    const refused = await engine('wrong-key')
      .open({ sampleRate: 8000, language: 'en-US' })
      .catch((e: unknown) => e);
    expect(isSttError(refused, 'STT_PROVIDER_REFUSED')).toBe(true);
    expect((refused as { status: number }).status).toBe(401);
  });

  it("a provider error fails the stream with a coded error in our words: AssemblyAI's code kept, its text dropped", async () => {
    const errors: (Error & { code: string })[] = [];
    const stream = await engine().open({
      sampleRate: 8000,
      language: 'en-US',
      events: { error: (e) => errors.push(e) },
    });
    standIn.breakStreams();
    await expect.poll(() => errors.length, { timeout: 10_000 }).toBe(1);
    expect(errors[0]!.code).toBe('STT_PROVIDER_ERROR');
    expect(errors[0]!.message).toContain('3005');
    expect(errors[0]!.message).not.toMatch(/worker|10\.1\.2\.3/);
    await stream.close();
  });
});
