// The embedded offline engines every call shares: Silero VAD, pocketsphinx (or an
// OpenAI-compatible recogniser) and flite/espeak-ng (or an OpenAI-compatible voice).
// Engines are made once per distinct configuration; each call opens its own stream.
import { VoiceConfigSchema, type AgentConfig } from '../agents/schema.ts';
import type { Dispatcher } from '../net/http.ts';
import { createSttEngine } from './stt/index.ts';
import { createTtsEngine } from './tts/index.ts';
import type { SpeechEngineProvider, SttEngine, TtsEngine } from './types.ts';
import { SileroVadEngine } from './vad/index.ts';

export interface EmbeddedSpeechOptions {
  /**
   * Make the default agent voice's engine now and warm it, so the first call's greeting does not
   * wait for it (flite's worker threads take a few hundred ms to start). Off in tests, where most
   * services never speak.
   */
  warm?: boolean;
  /** Where HTTP voices and recognisers send their requests: the service's egress-guarded pool. */
  dispatcher?: Dispatcher | undefined;
}

function canWarm(engine: TtsEngine): engine is TtsEngine & { warm(): void } {
  return typeof Reflect.get(engine, 'warm') === 'function';
}

export function createEmbeddedSpeechEngines(options: EmbeddedSpeechOptions = {}): SpeechEngineProvider {
  const vad = new SileroVadEngine();
  const stts = new Map<string, SttEngine>();
  const ttss = new Map<string, TtsEngine>();
  const tts = (config: AgentConfig['voice']): TtsEngine => {
    const key = JSON.stringify(config);
    let engine = ttss.get(key);
    if (!engine) ttss.set(key, (engine = createTtsEngine(config, { dispatcher: options.dispatcher })));
    return engine;
  };
  if (options.warm) {
    const engine = tts(VoiceConfigSchema.parse({}));
    if (canWarm(engine)) engine.warm();
  }
  return {
    vad,
    stt(config: AgentConfig['stt']) {
      // Phrases are per stream, not per engine: one engine serves every agent with these settings.
      const { phrases: _phrases, ...shared } = config;
      const key = JSON.stringify(shared);
      let engine = stts.get(key);
      if (!engine) stts.set(key, (engine = createSttEngine(config, { dispatcher: options.dispatcher })));
      return engine;
    },
    tts,
    async close() {
      await Promise.allSettled([vad.close(), ...[...ttss.values()].map((t) => t.close()), ...[...stts.values()].map((s) => s.close())]);
    },
  };
}
