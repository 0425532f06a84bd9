// An agent's recognisers, voices and models in the order a call tries them (docs/fallbacks.md): its own, its
// fallback list, and for speech an embedded engine last even when not listed, so a call whose providers all fail
// still hears and speaks. Engines are leased on first use (a fallback never needed is never made) and released
// with the call.
import type { AgentConfig, LlmConfig } from '../agents/schema.ts';
import { SttConfigSchema, VoiceConfigSchema } from '../agents/schema.ts';
import type { SttConfig } from '../speech/stt/index.ts';
import type { VoiceConfig } from '../speech/tts/index.ts';
import type { EngineLease, SpeechEngineProvider, SttEngine, TtsEngine } from '../speech/types.ts';
import type { CallProviders, ChainEntry, ProviderChain } from './providers.ts';

/** Engines that run in this process: nothing to connect to, so the chain ends at one of them. */
const EMBEDDED_STT: readonly string[] = ['pocketsphinx', 'moonshine'];
const EMBEDDED_VOICES: readonly string[] = ['flite', 'espeak'];
/** The last resorts: the lightest embedded engines (pocketsphinx needs no model download, flite no process). */
const LAST_RESORT_STT = 'pocketsphinx';
const LAST_RESORT_VOICE = 'flite';

/** One recogniser of the chain: its settings and its engine, leased on first use. */
interface SttChoice {
  config: SttConfig;
  engine(): SttEngine;
}

/** One voice of the chain: its settings and its engine, leased on first use. */
export interface VoiceChoice {
  config: VoiceConfig;
  engine(): TtsEngine;
}

/** The recognisers an agent's stt section names, in order, ending with an embedded one. */
export function sttConfigsOf(stt: AgentConfig['stt']): SttConfig[] {
  const { fallback, ...own } = stt;
  const configs: SttConfig[] = [own, ...(fallback ?? [])];
  if (!EMBEDDED_STT.includes(configs.at(-1)!.engine))
    configs.push(
      SttConfigSchema.parse({
        engine: LAST_RESORT_STT,
        language: own.language,
        ...(own.phrases ? { phrases: own.phrases } : {}),
      }),
    );
  return configs;
}

/** The voices an agent's voice section names, in order, ending with an embedded one. */
export function voiceConfigsOf(voice: AgentConfig['voice']): VoiceConfig[] {
  const { fallback, ...own } = voice;
  const configs: VoiceConfig[] = [own, ...(fallback ?? [])];
  // The last resort speaks the words as the agent's own voice would (numbers as words, its pronunciations).
  if (!EMBEDDED_VOICES.includes(configs.at(-1)!.engine))
    configs.push(
      VoiceConfigSchema.parse({
        engine: LAST_RESORT_VOICE,
        ...(own.normalize_for_speech !== undefined ? { normalize_for_speech: own.normalize_for_speech } : {}),
        ...(own.pronunciation ? { pronunciation: own.pronunciation } : {}),
      }),
    );
  return configs;
}

/** The models an agent's llm section names, in order (there is no embedded model to end on). */
export function llmConfigsOf(llm: AgentConfig['llm']): LlmConfig[] {
  const { fallback, ...own } = llm;
  return [own, ...(fallback ?? [])];
}

interface CallChains {
  stt: ProviderChain<SttChoice>;
  voice: ProviderChain<VoiceChoice>;
  llm: ProviderChain<LlmConfig>;
  /** Gives back every engine leased. */
  release(): void;
}

/** The call's three chains, registered with `providers` (which reports each move). */
export function callChains(agent: AgentConfig, engines: SpeechEngineProvider, providers: CallProviders): CallChains {
  const leases: EngineLease<unknown>[] = [];
  const leased = <E>(take: () => EngineLease<E>): (() => E) => {
    let lease: EngineLease<E> | undefined;
    return () => {
      if (!lease) {
        lease = take();
        leases.push(lease);
      }
      return lease.engine;
    };
  };
  const stt = sttConfigsOf(agent.stt).map((config): ChainEntry<SttChoice> => ({
    name: config.engine,
    provider: { config, engine: leased(() => engines.stt(config)) },
  }));
  const voice = voiceConfigsOf(agent.voice).map((config): ChainEntry<VoiceChoice> => ({
    name: config.engine,
    provider: { config, engine: leased(() => engines.tts(config)) },
  }));
  const llm = llmConfigsOf(agent.llm).map((config): ChainEntry<LlmConfig> => ({
    name: config.model,
    provider: config,
  }));
  return {
    stt: providers.chain('stt', stt),
    voice: providers.chain('voice', voice),
    llm: providers.chain('llm', llm),
    release() {
      for (const lease of leases.splice(0)) lease.release();
    },
  };
}
