import { describe, expect, it } from 'vitest';
import { englishSentenceEnds } from '../../../../src/speech/stt/pocketsphinx/sentence-ends.ts';

const words = (s: string) => s.split(' ');

describe('englishSentenceEnds', () => {
  const model = englishSentenceEnds()!;

  it("reads Debian's English model: a sentence seldom ends on a function word, often on a finished clause", () => {
    for (const open of ['the room was very', 'tell me how', 'i would like to speak with', 'we live near the'])
      expect(model.probability(words(open)), open).toBeLessThan(0.05);
    for (const whole of ['my daughter has a fever', 'where is your office', 'that works for me'])
      expect(model.probability(words(whole)), whole).toBeGreaterThan(0.15);
  });

  it('reads words it does not know as its unknown word, neither open nor closed', () => {
    const p = model.probability(words('my name is okonkwo'));
    expect(p).toBeGreaterThan(0.05);
    expect(p).toBeLessThan(0.15);
  });

  it('is read once per process, and is none where the model file is missing', () => {
    expect(englishSentenceEnds()).toBe(model);
    expect(englishSentenceEnds('/nonexistent/en-us.lm.bin')).toBeNull();
  });
});
