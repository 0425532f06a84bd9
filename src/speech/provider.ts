// The embedded offline engines every call shares: Silero VAD, pocketsphinx (or an
// OpenAI-compatible recogniser, or a streaming one: Deepgram, AssemblyAI) and flite/espeak-ng (or an
// OpenAI-compatible or a streaming voice).
// Engines are made once per distinct configuration and leased to calls; each call opens its own
// stream. Idle engines beyond ENGINE_CACHE_BOUND per kind are closed, least recently used first.
import { createHash } from 'node:crypto';
import { VoiceConfigSchema, type AgentConfig } from '../agents/schema.ts';
import type { Dispatcher } from '../net/http.ts';
import type { OpenWebSocket } from '../net/websocket.ts';
import { EngineCache } from './engine-cache.ts';
import { createSttEngine } from './stt/index.ts';
import { createTtsEngine } from './tts/index.ts';
import type { SpeechEngineProvider, SttEngine, TtsEngine } from './types.ts';
import { SileroVadEngine } from './vad/silero.ts';

/**
 * Engines of one kind (voices, recognisers) kept per provider. Far more than the distinct
 * configurations a service's agents use at once, yet small enough that an organization stepping
 * through voice speeds or api keys cannot pile up espeak processes and connections without end.
 */
export const ENGINE_CACHE_BOUND = 32;

export interface EmbeddedSpeechOptions {
  /**
   * Make the default agent voice's engine now and warm it, so the first call's greeting does not
   * wait for it (flite's worker threads take a few hundred ms to start). Off in tests, where most
   * services never speak.
   */
  warm?: boolean;
  /**
   * Where HTTP voices and recognisers send their requests: the service's egress-guarded pool (net/http.ts
   * OutboundHttp).
   */
  dispatcher: Dispatcher;
  /**
   * Where streaming recognisers, voices and speech-to-speech models open their sockets: the egress policy's
   * opener (net/websocket.ts). Absent where no streaming provider is used (unit tests of embedded engines).
   */
  openWebSocket?: OpenWebSocket;
}

/**
 * The cache key of an engine configuration. The api_key is replaced by its SHA-256, so two keys
 * still get two engines but the cache never holds the secret itself.
 */
export function engineCacheKey(config: { api_key?: string | undefined }): string {
  const { api_key: apiKey, ...rest } = config;
  return JSON.stringify(
    apiKey === undefined ? rest : { ...rest, api_key_sha256: createHash('sha256').update(apiKey).digest('hex') },
  );
}

function canWarm(engine: TtsEngine): engine is TtsEngine & { warm(): void } {
  return typeof Reflect.get(engine, 'warm') === 'function';
}

export function createEmbeddedSpeechEngines(options: EmbeddedSpeechOptions): SpeechEngineProvider {
  const vad = new SileroVadEngine();
  const stts = new EngineCache<SttEngine>(ENGINE_CACHE_BOUND);
  /** pocketsphinx and moonshine: one engine each per process whatever the settings, so never evicted. */
  const embeddedStts = new Set<SttEngine>();
  const ttss = new EngineCache<TtsEngine>(ENGINE_CACHE_BOUND);
  const tts = (config: AgentConfig['voice']) =>
    ttss.lease(engineCacheKey(config), () =>
      createTtsEngine(config, { dispatcher: options.dispatcher, openWebSocket: options.openWebSocket }),
    );
  if (options.warm) {
    // Released at once: the warm engine stays cached (most recently used) for the first call.
    const warmup = tts(VoiceConfigSchema.parse({}));
    if (canWarm(warmup.engine)) warmup.engine.warm();
    warmup.release();
  }
  return {
    vad,
    stt(config: AgentConfig['stt']) {
      // Phrases are per stream, not per engine: one engine serves every agent with these settings.
      const { phrases: _phrases, ...shared } = config;
      const factory = { dispatcher: options.dispatcher, openWebSocket: options.openWebSocket };
      if (shared.engine === 'pocketsphinx' || shared.engine === 'moonshine') {
        const engine = createSttEngine(config, factory);
        embeddedStts.add(engine);
        return { engine, release: () => undefined };
      }
      return stts.lease(engineCacheKey(shared), () => createSttEngine(config, factory));
    },
    tts,
    async close() {
      await Promise.allSettled([
        vad.close(),
        ttss.close(),
        stts.close(),
        ...[...embeddedStts].map((engine) => engine.close()),
      ]);
    },
  };
}
