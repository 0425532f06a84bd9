import { describe, expect, it } from 'vitest';
import { corpusWer, normalizeWords, wer, werCounts } from '../../bench/wer.ts';

describe('wer', () => {
  it('is zero for the same words whatever the case and punctuation', () => {
    expect(wer('Hello, World!', 'hello world')).toBe(0);
  });

  it('counts a substitution, a deletion and an insertion as one error each', () => {
    expect(werCounts('a b c d', 'a x c d')).toEqual({ errors: 1, words: 4 });
    expect(werCounts('a b c d', 'a c d')).toEqual({ errors: 1, words: 4 });
    expect(werCounts('a b c d', 'a b c d e')).toEqual({ errors: 1, words: 4 });
    expect(wer('a b c d', 'x b y')).toBe(3 / 4);
  });

  it('spells out digits so "4 5" and "four five" agree', () => {
    expect(normalizeWords('Order 45, please')).toEqual(['order', 'four', 'five', 'please']);
    expect(wer('my order number is four five', 'my order number is 45')).toBe(0);
  });

  it('keeps apostrophes inside words', () => {
    expect(normalizeWords("I'm 'here'")).toEqual(["i'm", 'here']);
  });

  it('scores an empty reference as 0 only against an empty hypothesis', () => {
    expect(wer('', '')).toBe(0);
    expect(wer('', 'noise')).toBe(1);
    expect(wer('two words', '')).toBe(1);
  });

  it('corpus WER weighs utterances by their word count', () => {
    const pairs = [
      { reference: 'one', hypothesis: 'two' },
      { reference: 'a b c d e f g h i', hypothesis: 'a b c d e f g h i' },
    ];
    expect(corpusWer(pairs)).toBeCloseTo(1 / 10);
  });
});
