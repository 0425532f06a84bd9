import { describe, expect, it } from 'vitest';
import { VoiceConfigSchema } from '../../../src/agents/schema.ts';
import { EgressPolicy } from '../../../src/net/egress.ts';
import { webSocketOpener } from '../../../src/net/websocket.ts';
import { createTtsEngine } from '../../../src/speech/tts/index.ts';
import { testDispatcher } from '../../support/outbound.ts';

describe('createTtsEngine', () => {
  it('picks the engine by name from the agent voice config, flite by default', async () => {
    for (const [config, name] of [
      [{}, 'flite'],
      [{ engine: 'espeak' }, 'espeak'],
      [{ engine: 'openai', base_url: 'http://127.0.0.1:9/v1', api_key: 'k' }, 'openai'],
    ] as const) {
      const engine = createTtsEngine(VoiceConfigSchema.parse(config), { dispatcher: testDispatcher });
      expect(engine.name).toBe(name);
      await engine.close();
    }
  });

  it('rejects the openai engine without base_url with TTS_CONFIG_INVALID', () => {
    expect(() =>
      createTtsEngine(VoiceConfigSchema.parse({ engine: 'openai' }), { dispatcher: testDispatcher }),
    ).toThrow(expect.objectContaining({ code: 'TTS_CONFIG_INVALID' }) as Error);
  });

  it('rejects an unknown flite voice with TTS_VOICE_UNKNOWN', () => {
    expect(() =>
      createTtsEngine(VoiceConfigSchema.parse({ voice_id: 'nobody' }), { dispatcher: testDispatcher }),
    ).toThrow(expect.objectContaining({ code: 'TTS_VOICE_UNKNOWN' }) as Error);
  });

  it('makes the streaming voices, each opening its sessions through the opener it is given', async () => {
    const openWebSocket = webSocketOpener(new EgressPolicy());
    for (const engine of ['elevenlabs', 'cartesia', 'deepgram'] as const) {
      const made = createTtsEngine(VoiceConfigSchema.parse({ engine, api_key: 'k' }), {
        dispatcher: testDispatcher,
        openWebSocket,
      });
      expect(made.name).toBe(engine);
      expect(typeof made.openSession).toBe('function');
      await made.close();
    }
  });

  it('rejects a streaming voice without api_key, or without a socket opener, with TTS_CONFIG_INVALID', () => {
    const openWebSocket = webSocketOpener(new EgressPolicy());
    expect(() =>
      createTtsEngine(VoiceConfigSchema.parse({ engine: 'cartesia' }), { dispatcher: testDispatcher, openWebSocket }),
    ).toThrow(expect.objectContaining({ code: 'TTS_CONFIG_INVALID' }) as Error);
    expect(() =>
      createTtsEngine(VoiceConfigSchema.parse({ engine: 'cartesia', api_key: 'k' }), { dispatcher: testDispatcher }),
    ).toThrow(expect.objectContaining({ code: 'TTS_CONFIG_INVALID' }) as Error);
  });
});

describe('voice.base_url', () => {
  it('is a ws(s) address for a streaming voice and an http(s) one for the openai engine', () => {
    expect(VoiceConfigSchema.safeParse({ engine: 'elevenlabs', base_url: 'wss://api.elevenlabs.io' }).success).toBe(
      true,
    );
    expect(VoiceConfigSchema.safeParse({ engine: 'deepgram', base_url: 'ws://127.0.0.1:9' }).success).toBe(true);
    expect(VoiceConfigSchema.safeParse({ engine: 'cartesia', base_url: 'https://api.cartesia.ai' }).success).toBe(
      false,
    );
    expect(VoiceConfigSchema.safeParse({ engine: 'openai', base_url: 'wss://example.com/v1' }).success).toBe(false);
    expect(VoiceConfigSchema.safeParse({ engine: 'openai', base_url: 'https://example.com/v1' }).success).toBe(true);
  });
});
