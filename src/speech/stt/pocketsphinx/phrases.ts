// Per-agent phrase hints. A second decoder per stream searches a grammar made only of the hint
// phrases over the same audio; the general language-model search always runs too. At the end of
// the utterance the hint wins only when the grammar path scores at least as well as the open
// search (it explains the audio no worse than anything the general model found), so speech that
// is not one of the hints still comes out as the general model heard it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEBIAN_MODEL_DIR } from './models.ts';

let dictionary: Set<string> | undefined;

/** Words the pronunciation dictionary knows: a hint with any other word cannot be searched. */
function knownWords(): Set<string> {
  if (!dictionary) {
    dictionary = new Set();
    for (const line of readFileSync(join(DEBIAN_MODEL_DIR, 'cmudict-en-us.dict'), 'utf8').split('\n')) {
      const word = line.split(' ', 1)[0];
      if (word) dictionary.add(word.replace(/\(\d+\)$/, ''));
    }
  }
  return dictionary;
}

export function normalizePhrase(phrase: string): string[] {
  return phrase
    .toLowerCase()
    .replace(/[^a-z0-9' ]+/g, ' ')
    .split(/\s+/)
    .filter(Boolean);
}

/** The hint phrases the decoder can search (every word in the dictionary), deduplicated. */
export function searchablePhrases(phrases: readonly string[]): string[][] {
  const known = knownWords();
  const seen = new Set<string>();
  const out: string[][] = [];
  for (const p of phrases) {
    const words = normalizePhrase(p);
    const key = words.join(' ');
    if (words.length === 0 || seen.has(key) || !words.every((w) => known.has(w))) continue;
    seen.add(key);
    out.push(words);
  }
  return out;
}

/** A JSGF grammar whose only sentences are the phrases. */
export function hintGrammar(phrases: string[][]): string {
  return `#JSGF V1.0;\ngrammar hints;\npublic <hint> = ${phrases.map((p) => `( ${p.join(' ')} )`).join(' | ')};\n`;
}

export interface Scored {
  text: string;
  score: number;
}

/** The grammar's hypothesis replaces the general one only when it scores no worse. */
export function hintWins(general: Scored, hint: Scored): boolean {
  return hint.text.length > 0 && hint.score >= general.score;
}
