import { afterEach, describe, expect, it, vi } from 'vitest';
import { SttConfigSchema, VoiceConfigSchema } from '../../src/agents/schema.ts';
import { createEmbeddedSpeechEngines, ENGINE_CACHE_BOUND, engineCacheKey } from '../../src/speech/provider.ts';
import { PocketsphinxEngine } from '../../src/speech/stt/index.ts';
import type { SpeechEngineProvider } from '../../src/speech/types.ts';
import { testDispatcher } from '../support/outbound.ts';

// HTTP voices and recognisers: making one opens nothing, so these tests need no server.
const BASE_URL = 'http://127.0.0.1:9/v1';
const SECRET = 'sk-live-0123456789abcdefghijklmnopqrstuv';
const voice = (extra: Record<string, unknown> = {}) =>
  VoiceConfigSchema.parse({ engine: 'openai', base_url: BASE_URL, ...extra });
const stt = (extra: Record<string, unknown> = {}) =>
  SttConfigSchema.parse({ engine: 'openai', base_url: BASE_URL, ...extra });

let provider: SpeechEngineProvider | undefined;
afterEach(async () => {
  await provider?.close();
  provider = undefined;
});

describe('engineCacheKey', () => {
  it('a key with an api_key holds no secret', () => {
    const key = engineCacheKey(voice({ api_key: SECRET }));
    expect(key).not.toContain(SECRET);
    expect(key).not.toContain('sk-live');
    expect(key).toMatch(/"api_key_sha256":"[0-9a-f]{64}"/);
    expect(engineCacheKey(stt({ api_key: SECRET }))).not.toContain(SECRET);
  });

  it('two api keys give two cache keys; one api key gives one', () => {
    expect(engineCacheKey(voice({ api_key: 'key-one' }))).not.toBe(engineCacheKey(voice({ api_key: 'key-two' })));
    expect(engineCacheKey(voice({ api_key: 'key-one' }))).toBe(engineCacheKey(voice({ api_key: 'key-one' })));
    expect(engineCacheKey(voice())).not.toBe(engineCacheKey(voice({ api_key: 'key-one' })));
  });
});

describe('createEmbeddedSpeechEngines', () => {
  it('configs that differ only in api_key get different engines; equal configs share one', () => {
    provider = createEmbeddedSpeechEngines({ dispatcher: testDispatcher });
    const one = provider.tts(voice({ api_key: 'key-one' }));
    const two = provider.tts(voice({ api_key: 'key-two' }));
    const oneAgain = provider.tts(voice({ api_key: 'key-one' }));
    expect(two.engine).not.toBe(one.engine);
    expect(oneAgain.engine).toBe(one.engine);
    const sttOne = provider.stt(stt({ api_key: 'key-one' }));
    const sttTwo = provider.stt(stt({ api_key: 'key-two' }));
    expect(sttTwo.engine).not.toBe(sttOne.engine);
    // Phrases are per stream: agents that differ only in them share the recogniser.
    expect(provider.stt(stt({ api_key: 'key-one', phrases: ['booking'] })).engine).toBe(sttOne.engine);
  });

  it('an idle voice is dropped once more than the bound of other voices were used since; one in use is kept', () => {
    provider = createEmbeddedSpeechEngines({ dispatcher: testDispatcher });
    const held = provider.tts(voice({ speed: 0.5 }));
    const idle = provider.tts(voice({ speed: 0.55 }));
    idle.release();
    // An organization stepping through speeds: each is used once and released.
    for (let i = 0; i < ENGINE_CACHE_BOUND; i++) provider.tts(voice({ speed: 1 + i / 100 })).release();
    expect(provider.tts(voice({ speed: 0.55 })).engine).not.toBe(idle.engine);
    expect(provider.tts(voice({ speed: 0.5 })).engine).toBe(held.engine);
  });

  it('the embedded recogniser, one per process, is never closed by eviction: after more HTTP recognisers than the bound it still serves', async () => {
    const closes = vi.spyOn(PocketsphinxEngine.prototype, 'close');
    provider = createEmbeddedSpeechEngines({ dispatcher: testDispatcher });
    const embedded = provider.stt(SttConfigSchema.parse({ engine: 'pocketsphinx', language: 'en-US' }));
    embedded.release();
    for (let i = 0; i < ENGINE_CACHE_BOUND + 2; i++) provider.stt(stt({ api_key: `key-${i}` })).release();
    const again = provider.stt(SttConfigSchema.parse({ engine: 'pocketsphinx', language: 'en-US' }));
    expect(again.engine).toBe(embedded.engine);
    expect(closes).not.toHaveBeenCalled();
    closes.mockRestore();
    const stream = await again.engine.open({ sampleRate: 16000, language: 'en-US' });
    await stream.close();
  }, 30_000);
});
