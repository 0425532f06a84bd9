// Typed face of the native flite addon (native/flite). synthesize() blocks for the whole
// utterance, so only worker threads load it.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SpeechError } from '../../errors.ts';

export interface FliteAddon {
  /** Voice names compiled into the addon. */
  voices(): string[];
  /** Register a voice now; false when the addon has no such voice. */
  loadVoice(name: string): boolean;
  /**
   * Speak one utterance, calling onAudio with each block of samples as the vocoder makes it.
   * Stops at the next block once cancel[0] is non-zero. True when spoken to the end.
   */
  synthesize(
    voice: string,
    text: string,
    durationStretch: number,
    cancel: Int32Array,
    onAudio: (samples: Int16Array, sampleRate: number) => void,
  ): boolean;
}

const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
export const FLITE_ADDON_PATH = join(PROJECT_ROOT, 'build', 'native', 'flite.node');

export function addonMissing(path: string): SpeechError {
  return new SpeechError(
    'TTS_ADDON_MISSING',
    `flite addon not built at ${path}: run npm run setup (needs apt package flite1-dev)`,
  );
}

/** Load the addon; TTS_ADDON_MISSING when set-up has not built it or it cannot be loaded. */
export function loadFliteAddon(path: string = FLITE_ADDON_PATH): FliteAddon {
  if (!existsSync(path)) throw addonMissing(path);
  let mod: unknown;
  try {
    mod = createRequire(import.meta.url)(path);
  } catch (err) {
    // e.g. libflite1 removed after the build: the shared object no longer links.
    throw new SpeechError('TTS_ADDON_MISSING', `flite addon at ${path} failed to load: ${(err as Error).message}`, {
      cause: err,
    });
  }
  if (!isFliteAddon(mod)) throw new SpeechError('TTS_ADDON_MISSING', `${path} is not the flite addon`);
  return mod;
}

function isFliteAddon(mod: unknown): mod is FliteAddon {
  if (typeof mod !== 'object' || mod === null) return false;
  return ['voices', 'loadVoice', 'synthesize'].every((name) => typeof Reflect.get(mod, name) === 'function');
}
