// Where the pocketsphinx models live and how a decoder is configured for each. The general
// model is Debian's pocketsphinx-en-us; the telephone variant is built from it at set-up
// (scripts/setup.d/30-speech-stt.mjs) under build/models. Nothing is fetched at run time.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');

export const DEBIAN_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';

export type ModelName = 'general' | 'telephone';

export interface ModelSpec {
  name: ModelName;
  /** Arguments to the native Decoder, as on the pocketsphinx command line. */
  args: string[];
}

export const MODEL_DEFAULTS = {
  /** Decoders hear 16 kHz; other rates are resampled inside the worker. */
  sampleRate: 16000,
  telephoneDir: join(PROJECT_ROOT, 'build', 'models', 'en-us-telephone'),
  /**
   * MLLR transform of the model's means onto the 8 kHz μ-law telephone channel, estimated on
   * synthetic calibration speech by scripts/derive-telephone-mllr.ts (committed, a few kB).
   */
  telephoneMllr: join(PROJECT_ROOT, 'media', 'models', 'en-us-telephone.mllr'),
} as const;

/**
 * Channel normalisation per call. The library weighs its starting mean as 500 frames (5 s) of
 * speech and re-estimates only at the end of an utterance, so a caller's first sentences were
 * decoded with the model's prior (the general model's wideband one is far from any telephone
 * channel). Each call starts from the model's mean weighted as `priorFrames`, re-estimated every
 * `updateEveryFrames` frames until `fastUntilFrames` frames of this caller were heard.
 */
export const CMN_ADAPTATION = { priorFrames: 100, updateEveryFrames: 20, fastUntilFrames: 1000 } as const;

function baseArgs(hmm: string): string[] {
  return [
    '-hmm',
    hmm,
    '-lm',
    join(DEBIAN_MODEL_DIR, 'en-us.lm.bin'),
    '-dict',
    join(DEBIAN_MODEL_DIR, 'cmudict-en-us.dict'),
    '-samprate',
    String(MODEL_DEFAULTS.sampleRate),
  ];
}

/**
 * Search of the general model: at most 2,500 HMMs and 10 word exits per frame, the top 3
 * Gaussians, and no second (flat-lexicon) pass at the end of an utterance. A lighter language
 * model weight (5.5) read 0.5 points better on calibration sentences but let phrase hints win
 * over speech that was none of them, so the library's 6.5 stays. Measured with the
 * decoder alone on an idle machine, on 7 s of continuous speech: ~0.17 x real time (0.22 at 4,000
 * HMMs, 0.31 with the library's defaults), so 8 real-time streams keep up on 2 cores where 4,000
 * held 4; the end-of-utterance work ~20 ms instead of 120. Word error on the calibration
 * sentences (not the test fixtures) is the same 6% at 2,500 and 4,000; 2,000 starts to lose
 * words.
 */
export const GENERAL_SEARCH_ARGS = ['-maxhmmpf', '2500', '-maxwpf', '10', '-topn', '3', '-fwdflat', 'no'] as const;

export function generalModel(): ModelSpec {
  return { name: 'general', args: [...baseArgs(join(DEBIAN_MODEL_DIR, 'en-us')), ...GENERAL_SEARCH_ARGS] };
}

/**
 * Search of the telephone variant: the library's beams and its flat second pass (band-limited
 * audio sits further from the model and loses more to pruning: without the second pass the
 * calibration sentences read 11.1% instead of 9.2%), but at most 6,000 HMMs and 10 word exits
 * per frame: the same 9.2% on the calibration sentences at ~0.3 x real time instead of ~0.4.
 */
export const TELEPHONE_SEARCH_ARGS = ['-maxhmmpf', '6000', '-maxwpf', '10'] as const;

/** The telephone-band variant, or null when set-up has not built it. */
export function telephoneModel(
  dir: string = MODEL_DEFAULTS.telephoneDir,
  mllr: string = MODEL_DEFAULTS.telephoneMllr,
): ModelSpec | null {
  if (!existsSync(join(dir, 'feat.params'))) return null;
  return {
    name: 'telephone',
    args: [...baseArgs(dir), ...TELEPHONE_SEARCH_ARGS, ...(existsSync(mllr) ? ['-mllr', mllr] : [])],
  };
}

/** Missing files of the Debian model, for a clear error before a worker starts. */
export function missingModelFiles(): string[] {
  return ['en-us/mdef', 'en-us/means', 'en-us.lm.bin', 'cmudict-en-us.dict']
    .map((f) => join(DEBIAN_MODEL_DIR, f))
    .filter((f) => !existsSync(f));
}
