// Word error rate: word-level edit distance (substitutions + deletions + insertions) over the
// number of reference words, after normalising case, punctuation and spelled-out numbers alike.

const DIGITS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];

/** Lower-case words without punctuation; lone digits spelled out so "5" and "five" agree. */
export function normalizeWords(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[’']/g, "'")
    .replace(/[^a-z0-9' ]+/g, ' ')
    .split(/\s+/)
    .map((w) => w.replace(/^'+|'+$/g, ''))
    .filter((w) => w.length > 0)
    .flatMap((w) => (/^[0-9]+$/.test(w) ? [...w].map((d) => DIGITS[Number(d)] ?? d) : [w]));
}

export interface WerCounts {
  /** Substitutions + deletions + insertions. */
  errors: number;
  /** Words in the reference. */
  words: number;
}

/** Edit distance between the normalised word sequences, with the reference length. */
export function werCounts(reference: string, hypothesis: string): WerCounts {
  const ref = normalizeWords(reference);
  const hyp = normalizeWords(hypothesis);
  // One rolling row of the Levenshtein table: O(|hyp|) memory.
  let prev = Array.from({ length: hyp.length + 1 }, (_, j) => j);
  for (let i = 1; i <= ref.length; i++) {
    const row = [i];
    for (let j = 1; j <= hyp.length; j++) {
      const sub = (prev[j - 1] ?? 0) + (ref[i - 1] === hyp[j - 1] ? 0 : 1);
      row.push(Math.min(sub, (prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1));
    }
    prev = row;
  }
  return { errors: prev[hyp.length] ?? 0, words: ref.length };
}

/** WER of one pair, 0..(can exceed 1 with insertions). An empty reference scores 0 only for an empty hypothesis. */
export function wer(reference: string, hypothesis: string): number {
  const { errors, words } = werCounts(reference, hypothesis);
  if (words === 0) return errors === 0 ? 0 : 1;
  return errors / words;
}

/** Corpus WER: total errors over total reference words (not the mean of per-utterance rates). */
export function corpusWer(pairs: Iterable<{ reference: string; hypothesis: string }>): number {
  let errors = 0;
  let words = 0;
  for (const { reference, hypothesis } of pairs) {
    const c = werCounts(reference, hypothesis);
    errors += c.errors;
    words += c.words;
  }
  return words === 0 ? 0 : errors / words;
}
