import { describe, expect, it } from 'vitest';
import { CartesiaTtsEngine, CartesiaWire } from '../../../../src/speech/tts/cartesia/engine.ts';
import { failure, openLocal, streamingVoiceRules } from '../stand-ins/session-cases.ts';
import { CartesiaRequestSchema, startCartesiaStandIn } from './stand-in.ts';

streamingVoiceRules({
  provider: 'cartesia',
  timesWords: true,
  start: (key) => startCartesiaStandIn(key),
  engine: (baseUrl, apiKey) => new CartesiaTtsEngine({ apiKey, baseUrl, openWebSocket: openLocal }),
});

describe('Cartesia wire', () => {
  it('keeps every field but transcript and continue the same across a context, asking pcm_mulaw at 8 kHz', () => {
    const wire = new CartesiaWire({ apiKey: 'k' }, 8000);
    const first = CartesiaRequestSchema.parse(JSON.parse(wire.text('c1', 'Hello,')[0]!));
    const end = CartesiaRequestSchema.parse(JSON.parse(wire.end('c1')[0]!));
    expect(first.output_format).toEqual({ container: 'raw', encoding: 'pcm_mulaw', sample_rate: 8000 });
    expect(first).toMatchObject({ transcript: 'Hello, ', continue: true, add_timestamps: true, context_id: 'c1' });
    const { transcript: _a, continue: _b, ...sameA } = first;
    const { transcript: _c, continue: _d, ...sameB } = end;
    expect(sameB).toEqual(sameA);
    expect(end).toMatchObject({ transcript: '', continue: false });
    expect(new CartesiaWire({ apiKey: 'k' }, 16000).text('c', 'x')[0]).toContain('"pcm_s16le"');
  });

  it("asks the agent's speed as generation_config.speed within Cartesia's 0.6-1.5, and nothing at the voice's own pace", () => {
    const speedOf = (speed: number | undefined) =>
      CartesiaRequestSchema.parse(JSON.parse(new CartesiaWire({ apiKey: 'k', speed }, 8000).text('c', 'Hi')[0]!))
        .generation_config;
    expect(speedOf(1.2)).toEqual({ speed: 1.2 });
    expect(speedOf(2)).toEqual({ speed: 1.5 });
    expect(speedOf(0.5)).toEqual({ speed: 0.6 });
    expect(speedOf(1)).toBeUndefined();
    expect(speedOf(undefined)).toBeUndefined();
  });

  it("turns Cartesia's error message into TTS_PROVIDER_ERROR with its code and status, not its text", async () => {
    const standIn = await startCartesiaStandIn('k');
    try {
      const session = new CartesiaTtsEngine({
        apiKey: 'k',
        baseUrl: standIn.url,
        model: 'no-such-model',
        openWebSocket: openLocal,
      }).openSession({ sampleRate: 8000 });
      const u = session.utterance();
      u.write('Hello.');
      u.end();
      const error = await failure(u);
      expect(error.code).toBe('TTS_PROVIDER_ERROR');
      expect(error.message).toBe('cartesia reported error model_not_found (status 400)');
      await session.close();
    } finally {
      await standIn.close();
    }
  });
});
