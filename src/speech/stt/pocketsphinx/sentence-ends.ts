// How likely a sentence is to end after the words so far, from the US English n-gram model Debian's
// pocketsphinx-en-us ships (en-us.lm.bin, CMU's trigram model of general English): the end of turn's
// reading of an ending no rule names ("The room was very", "Tell me how"). One model per process,
// read on first use (tens of milliseconds: the file is a memory-mapped trie); each question after
// that takes microseconds, so the end of turn asks on the main thread.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadLanguageModelClass, type NativeLanguageModel } from './addon.ts';
import { DEBIAN_MODEL_DIR } from './models.ts';

export const ENGLISH_LM_PATH = join(DEBIAN_MODEL_DIR, 'en-us.lm.bin');

export interface SentenceEnds {
  /** P(a sentence ends here | its words so far, lower-case), 0–1. */
  probability(words: readonly string[]): number;
}

const models = new Map<string, SentenceEnds | null>();

/**
 * The English model, read once per process; null where it cannot be (the addon not built, the package missing), and
 * the end of turn then reads the words by its rules alone.
 */
export function englishSentenceEnds(path = ENGLISH_LM_PATH): SentenceEnds | null {
  if (!models.has(path)) models.set(path, readModel(path));
  return models.get(path)!;
}

function readModel(path: string): SentenceEnds | null {
  if (!existsSync(path)) return null;
  let model: NativeLanguageModel;
  try {
    model = new (loadLanguageModelClass())(path);
  } catch {
    return null;
  }
  return { probability: (words) => model.endProbability([...words]) };
}
