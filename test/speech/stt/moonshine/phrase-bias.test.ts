import { describe, expect, it } from 'vitest';
import { PhraseBias, phraseSpellings } from '../../../../src/speech/stt/moonshine/phrase-bias.ts';

// A toy tokenizer: one token per word, ids from a fixed table, so the tests read as words.
const VOCAB = [
  'sloth',
  'island',
  'Sloth',
  'Island',
  'azura',
  'Azura',
  'the',
  'to',
  'trader',
  'Trader',
  'bob',
  'Bob',
  'end',
];
const id = (word: string) => {
  const at = VOCAB.indexOf(word);
  if (at < 0) throw new Error(`no token for ${word}`);
  return at + 10;
};
const encode = (text: string) => text.split(' ').map(id);

/** Walks a token sequence through the bias, adding up the bonuses. */
function walk(bias: PhraseBias, words: string[], finished = false): number {
  let state = bias.start;
  let total = 0;
  for (const word of words) {
    const step = bias.step(state, id(word));
    total += step.bonus;
    state = step.state;
  }
  if (finished) total += bias.step(state, id('end'), true).bonus;
  return total;
}

describe('phrase hints by shallow fusion', () => {
  it('gives each token of a whole phrase the bonus and keeps it', () => {
    const bias = new PhraseBias(['Sloth Island'], encode, 2);
    expect(walk(bias, ['to', 'Sloth', 'Island'], true)).toBe(4);
  });

  it('takes back the bonus of a match that breaks off before the phrase ends', () => {
    const bias = new PhraseBias(['Sloth Island'], encode, 2);
    expect(walk(bias, ['Sloth', 'the'])).toBe(0);
    // …and of one still under way when the utterance ends
    expect(walk(bias, ['to', 'Sloth'], true)).toBe(0);
  });

  it('lets a broken-off match start the next phrase on the same token', () => {
    const bias = new PhraseBias(['Sloth Island', 'Azura'], encode, 2);
    expect(walk(bias, ['Sloth', 'Azura'], true)).toBe(2);
  });

  it('keeps a short phrase when a longer one through it breaks off', () => {
    const bias = new PhraseBias(['Trader', 'Trader Bob'], encode, 1.5);
    expect(walk(bias, ['Trader', 'the'], true)).toBe(1.5);
    expect(walk(bias, ['Trader', 'Bob'], true)).toBe(3);
  });

  it('offers the next tokens of the phrases under way and the first tokens of all of them', () => {
    const bias = new PhraseBias(['Sloth Island', 'Azura'], encode, 2);
    expect(new Set(bias.candidates(bias.start))).toEqual(new Set([id('Sloth'), id('sloth'), id('Azura'), id('azura')]));
    const after = bias.step(bias.start, id('Sloth')).state;
    expect(bias.candidates(after)).toContain(id('Island'));
    expect(bias.candidates(after)).toContain(id('Azura'));
  });

  it('matches the spellings the model may write: as given, lower case, each word capitalised', () => {
    expect(phraseSpellings('  sloth   island ')).toEqual(['sloth island', 'Sloth Island']);
    expect(phraseSpellings('Azura')).toEqual(['Azura', 'azura']);
    expect(phraseSpellings('   ')).toEqual([]);
    const bias = new PhraseBias(['sloth island'], encode, 2);
    expect(walk(bias, ['Sloth', 'Island'], true)).toBe(4);
  });

  it('is empty without phrases, so decoding takes its plain path', () => {
    expect(new PhraseBias([], encode).empty).toBe(true);
    expect(new PhraseBias(['Azura'], encode).empty).toBe(false);
  });
});
