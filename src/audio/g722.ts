// G.722, the 16 kHz codec of wideband phone lines (64 kbit/s: 160 bytes per 20 ms), through the
// spandsp addon built from native/g722 by the set-up. An encoder or decoder carries its ADPCM state
// from frame to frame, so each direction of each call has its own.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AudioError } from './errors.ts';

export const G722_ADDON_PATH = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'build',
  'native',
  'g722.node',
);

export interface G722Encoder {
  /** 16 kHz samples in, half as many bytes out. */
  encode(pcm: Int16Array): Buffer;
}

export interface G722Decoder {
  /** Bytes in, twice as many 16 kHz samples out. */
  decode(bytes: Uint8Array): Int16Array;
}

interface G722Addon {
  Encoder: new () => G722Encoder;
  Decoder: new () => G722Decoder;
}

let addon: G722Addon | undefined;

function load(): G722Addon {
  if (addon) return addon;
  if (!existsSync(G722_ADDON_PATH)) {
    throw new AudioError('AUDIO_G722_MISSING', `the G.722 addon is not built at ${G722_ADDON_PATH}: run npm run setup`);
  }
  const mod = createRequire(import.meta.url)(G722_ADDON_PATH) as Partial<G722Addon>;
  if (typeof mod.Encoder !== 'function' || typeof mod.Decoder !== 'function') {
    throw new AudioError('AUDIO_G722_MISSING', `${G722_ADDON_PATH} does not export Encoder and Decoder`);
  }
  addon = mod as G722Addon;
  return addon;
}

export function g722Encoder(): G722Encoder {
  return new (load().Encoder)();
}

export function g722Decoder(): G722Decoder {
  return new (load().Decoder)();
}
