// Typed face of the native pocketsphinx addon (native/pocketsphinx). Its decoders' calls block, so
// only worker threads make decoders; its language model answers in microseconds on any thread.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { SttError } from '../errors.ts';
import { PROJECT_ROOT } from './models.ts';

export interface NativeHyp {
  text: string;
  score: number;
  prob: number;
}

export interface NativeSegment {
  word: string;
  /** Frames (frameRate() per second). */
  start: number;
  end: number;
  /** Log posterior (0 = certain) when a lattice exists. */
  prob: number;
  ascr: number;
}

export interface NativeCmn {
  mean: number[];
  frames: number;
}

export interface NativeDecoder {
  startUtt(): void;
  processRaw(samples: Int16Array): number;
  endUtt(): void;
  hyp(): NativeHyp | null;
  segments(): NativeSegment[];
  inSpeech(): boolean;
  setJsgf(name: string, jsgf: string): void;
  setKeyphrase(name: string, phrase: string): void;
  setKws(name: string, file: string): void;
  setLmFile(name: string, file: string): void;
  setSearch(name: string): void;
  getSearch(): string | null;
  frameRate(): number;
  nFrames(): number;
  /** The live cepstral mean and the frames it stands for; null when the model has no live CMN. */
  cmn(): NativeCmn | null;
  /** Start from `mean` as if it had been estimated over `frames` frames. */
  setCmn(mean: number[], frames: number): void;
  /** Re-estimate the mean from the frames seen so far. */
  updateCmn(): void;
  close(): void;
}

export type NativeDecoderConstructor = new (args: string[]) => NativeDecoder;

export interface NativeLanguageModel {
  /** P(end of sentence | the last words), 0–1. */
  endProbability(words: string[]): number;
  close(): void;
}

export type NativeLanguageModelConstructor = new (path: string) => NativeLanguageModel;

export const ADDON_PATH = join(PROJECT_ROOT, 'build', 'native', 'pocketsphinx.node');

/** A class the addon exports; throws STT_ADDON_MISSING when set-up has not built it. */
function loadClass(path: string, name: 'Decoder' | 'LanguageModel'): unknown {
  if (!existsSync(path)) {
    throw new SttError('STT_ADDON_MISSING', `pocketsphinx addon not built at ${path}: run npm run setup`);
  }
  const mod: unknown = createRequire(import.meta.url)(path);
  const cls = typeof mod === 'object' && mod !== null ? (mod as Record<string, unknown>)[name] : undefined;
  if (typeof cls !== 'function') throw new SttError('STT_ADDON_MISSING', `${path} does not export ${name}`);
  return cls;
}

let loaded: NativeDecoderConstructor | undefined;

/** The Decoder class of the addon; throws STT_ADDON_MISSING when set-up has not built it. */
export function loadDecoderClass(path: string = ADDON_PATH): NativeDecoderConstructor {
  loaded ??= loadClass(path, 'Decoder') as NativeDecoderConstructor;
  return loaded;
}

/** The LanguageModel class of the addon; throws STT_ADDON_MISSING when set-up has not built it. */
export function loadLanguageModelClass(path: string = ADDON_PATH): NativeLanguageModelConstructor {
  return loadClass(path, 'LanguageModel') as NativeLanguageModelConstructor;
}
