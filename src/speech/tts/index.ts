// createTtsEngine(voiceConfig): the agent's voice settings → an engine, keyed by engine name.
import type { z } from 'zod';
import type { VoiceConfigSchema } from '../../agents/schema.ts';
import type { Dispatcher } from '../../net/http.ts';
import type { OpenWebSocket } from '../../net/websocket.ts';
import { SpeechError } from '../errors.ts';
import type { TtsEngine } from '../types.ts';
import { EspeakTtsEngine } from './espeak.ts';
import { FLITE_VOICES, FliteTtsEngine } from './flite.ts';
import { CartesiaTtsEngine } from './cartesia/engine.ts';
import { DeepgramTtsEngine } from './deepgram/engine.ts';
import { ElevenLabsTtsEngine } from './elevenlabs/engine.ts';
import { OpenAiTtsEngine } from './openai.ts';

export type VoiceConfig = z.output<typeof VoiceConfigSchema>;

export interface TtsFactoryOptions {
  /** Model name sent to an OpenAI-compatible endpoint (default "tts-1"). */
  openaiModel?: string;
  /** Where an HTTP voice's requests go: the service's egress-guarded pool (net/http.ts OutboundHttp). */
  dispatcher: Dispatcher;
  /** Where a streaming voice opens its socket: the egress policy's opener (net/websocket.ts). */
  openWebSocket?: OpenWebSocket | undefined;
}

/** What a streaming voice needs of its settings: a key, and the opener its socket goes through. */
function streamingVoice(config: VoiceConfig, options: TtsFactoryOptions) {
  if (!config.api_key) throw new SpeechError('TTS_CONFIG_INVALID', `the ${config.engine} voice engine needs api_key`);
  if (!options.openWebSocket)
    throw new SpeechError('TTS_CONFIG_INVALID', `the ${config.engine} voice engine needs the service's socket opener`);
  return {
    apiKey: config.api_key,
    baseUrl: config.base_url,
    model: config.model,
    // voice_id defaults to a flite voice: the provider's own default voice then.
    voiceId: isFliteVoiceName(config.voice_id) ? undefined : config.voice_id,
    openWebSocket: options.openWebSocket,
  };
}

// voice_id defaults to a flite voice in the agent schema; other engines then use their own default.
const isFliteVoiceName = (voice: string) => (FLITE_VOICES as readonly string[]).includes(voice);

export function createTtsEngine(config: VoiceConfig, options: TtsFactoryOptions): TtsEngine {
  switch (config.engine) {
    case 'flite':
      return new FliteTtsEngine({ voice: config.voice_id, speed: config.speed });
    case 'espeak':
      return new EspeakTtsEngine({
        voice: isFliteVoiceName(config.voice_id) ? 'en-us' : config.voice_id,
        speed: config.speed,
      });
    case 'openai': {
      if (!config.base_url) throw new SpeechError('TTS_CONFIG_INVALID', 'the openai voice engine needs base_url');
      return new OpenAiTtsEngine(
        {
          baseUrl: config.base_url,
          ...(config.api_key ? { apiKey: config.api_key } : {}),
          ...(options.openaiModel ? { model: options.openaiModel } : {}),
          voice: isFliteVoiceName(config.voice_id) ? 'alloy' : config.voice_id,
          speed: config.speed,
        },
        options.dispatcher,
      );
    }
    case 'elevenlabs':
      return new ElevenLabsTtsEngine({ ...streamingVoice(config, options), speed: config.speed });
    case 'cartesia':
      return new CartesiaTtsEngine({ ...streamingVoice(config, options), speed: config.speed });
    case 'deepgram': {
      // An Aura model names its voice: model, else voice_id, else Aura's default.
      const { voiceId, model, ...rest } = streamingVoice(config, options);
      return new DeepgramTtsEngine({ ...rest, model: model ?? voiceId });
    }
  }
}
