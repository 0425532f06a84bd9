// Speech-to-text engines behind one factory keyed by the agent's stt.engine.
import type { z } from 'zod';
import type { SttConfigSchema } from '../../agents/schema.ts';
import type { Dispatcher } from '../../net/http.ts';
import type { OpenWebSocket } from '../../net/websocket.ts';
import type { SttEngine } from '../types.ts';
import { SttError } from './errors.ts';
import { MOONSHINE_DEFAULTS, MoonshineEngine, type MoonshineEngineOptions } from './moonshine/engine.ts';
import { machineReader, usesMachineRecogniser } from './moonshine/machine-pool.ts';
import { MOONSHINE_SIZE_NAMES, type MoonshineSize } from './moonshine/recogniser.ts';
import { AssemblyAiSttEngine } from './assemblyai/engine.ts';
import { DeepgramSttEngine } from './deepgram/engine.ts';
import { OpenAiSttEngine } from './openai/engine.ts';
import { PocketsphinxEngine, type PocketsphinxEngineOptions } from './pocketsphinx/engine.ts';

export { PocketsphinxEngine, type PocketsphinxEngineOptions } from './pocketsphinx/engine.ts';
export type { MoonshineEngineOptions } from './moonshine/engine.ts';

export type SttConfig = z.output<typeof SttConfigSchema>;

export interface SttFactoryOptions {
  /** One embedded engine (and its worker pool) shared by every agent that uses pocketsphinx. */
  pocketsphinx?: PocketsphinxEngine;
  pocketsphinxOptions?: PocketsphinxEngineOptions;
  moonshineOptions?: MoonshineEngineOptions;
  /** Where an HTTP recogniser's requests go: the service's egress-guarded pool (net/http.ts OutboundHttp). */
  dispatcher: Dispatcher;
  /** Where a streaming recogniser's socket opens: the egress policy's opener (net/websocket.ts). */
  openWebSocket?: OpenWebSocket | undefined;
}

let sharedPocketsphinx: PocketsphinxEngine | undefined;
/** One engine (and worker pool) per Moonshine model. */
const sharedMoonshine = new Map<MoonshineSize, MoonshineEngine>();

/** The Moonshine model an agent's stt.model names (the schema admits only these), or the default. */
function moonshineSizeOf(model: string | undefined): MoonshineSize {
  if (model === undefined) return MOONSHINE_DEFAULTS.model;
  const size = MOONSHINE_SIZE_NAMES.find((name) => name === model);
  if (!size) throw new SttError('STT_CONFIG_INVALID', `moonshine has no model "${model}"`);
  return size;
}

/**
 * The engine an agent's stt config asks for. pocketsphinx engines share one worker pool, and so do moonshine engines.
 */
export function createSttEngine(config: SttConfig, options: SttFactoryOptions): SttEngine {
  switch (config.engine) {
    case 'pocketsphinx':
      if (options.pocketsphinx) return options.pocketsphinx;
      sharedPocketsphinx ??= new PocketsphinxEngine(options.pocketsphinxOptions);
      return sharedPocketsphinx;
    case 'moonshine': {
      const model = moonshineSizeOf(config.model);
      let engine = sharedMoonshine.get(model);
      // A service worker of several on one machine sends its audio to the machine's one recogniser.
      if (!engine)
        sharedMoonshine.set(
          model,
          (engine = new MoonshineEngine(
            usesMachineRecogniser() ? { reader: machineReader(model) } : { ...options.moonshineOptions, model },
          )),
        );
      return engine;
    }
    case 'openai':
      if (!config.base_url) throw new SttError('STT_CONFIG_INVALID', 'stt.base_url is required for the openai engine');
      return new OpenAiSttEngine({
        baseUrl: config.base_url,
        ...(config.api_key ? { apiKey: config.api_key } : {}),
        ...(config.model ? { model: config.model } : {}),
        dispatcher: options.dispatcher,
      });
    case 'deepgram':
      return new DeepgramSttEngine({
        apiKey: config.api_key,
        baseUrl: config.base_url,
        model: config.model,
        openWebSocket: options.openWebSocket,
      });
    case 'assemblyai':
      return new AssemblyAiSttEngine({
        apiKey: config.api_key,
        baseUrl: config.base_url,
        model: config.model,
        openWebSocket: options.openWebSocket,
      });
  }
}
