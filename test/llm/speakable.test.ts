import { describe, expect, it } from 'vitest';
import { SpeakableChunker } from '../../src/llm/speakable.ts';

function run(tokens: string[], chunker = new SpeakableChunker()): string[] {
  const out: string[] = [];
  for (const t of tokens) {
    const c = chunker.push(t);
    if (c !== null) out.push(c);
  }
  const rest = chunker.flush();
  if (rest !== null) out.push(rest);
  return out;
}

/** Splits text into one-character tokens: the hardest stream for an incremental scanner. */
const chars = (s: string): string[] => [...s];

describe('speakable chunking', () => {
  const table: { rule: string; text: string; chunks: string[] }[] = [
    {
      rule: 'cuts at a sentence end',
      text: 'Hello there. How can I help?',
      chunks: ['Hello there.', 'How can I help?'],
    },
    {
      rule: 'cuts the first chunk early at a clause after enough words',
      text: 'Sure thing, I can book that, and then we are done.',
      chunks: ['Sure thing, I can book that,', 'and then we are done.'],
    },
    {
      rule: 'does not cut the first chunk at a clause too early',
      text: 'Yes, of course. Next one.',
      chunks: ['Yes, of course.', 'Next one.'],
    },
    {
      rule: 'cuts later chunks only at sentence ends',
      text: 'Okay. First, second, third, fourth, fifth, sixth. Done.',
      chunks: ['Okay.', 'First, second, third, fourth, fifth, sixth.', 'Done.'],
    },
    {
      rule: 'never cuts inside a decimal number',
      text: 'It costs 3.5 dollars today. Bye.',
      chunks: ['It costs 3.5 dollars today.', 'Bye.'],
    },
    {
      rule: 'never cuts inside a money amount with separators',
      text: 'The total is $1,200.50 for you. Thanks.',
      chunks: ['The total is $1,200.50 for you.', 'Thanks.'],
    },
    {
      rule: 'does not end a sentence at a title abbreviation',
      text: 'Dr. Smith will see you. Mrs. Jones too.',
      chunks: ['Dr. Smith will see you.', 'Mrs. Jones too.'],
    },
    {
      rule: 'does not end a sentence at e.g. or i.e.',
      text: 'Bring an ID, e.g. a passport. Thanks.',
      chunks: ['Bring an ID, e.g. a passport.', 'Thanks.'],
    },
    {
      rule: 'does not end a sentence at a dotted acronym',
      text: 'We ship to the U.S. and Canada. Ok.',
      chunks: ['We ship to the U.S. and Canada.', 'Ok.'],
    },
    {
      rule: 'does not end a sentence at an initial',
      text: 'Ask for J. Smith at the desk. Bye.',
      chunks: ['Ask for J. Smith at the desk.', 'Bye.'],
    },
    {
      rule: 'never cuts inside a URL',
      text: 'Visit https://example.com/a.b?x=1. Then call.',
      chunks: ['Visit https://example.com/a.b?x=1.', 'Then call.'],
    },
    {
      rule: 'never cuts inside an e-mail address',
      text: 'Write to ann.lee@example.co.uk today. Bye.',
      chunks: ['Write to ann.lee@example.co.uk today.', 'Bye.'],
    },
    {
      rule: 'keeps closing quotes with their sentence',
      text: 'She said "see you." Then left.',
      chunks: ['She said "see you."', 'Then left.'],
    },
    {
      rule: 'cuts after question and exclamation marks and ellipses',
      text: 'Really? Yes! Well... maybe.',
      chunks: ['Really?', 'Yes!', 'Well...', 'maybe.'],
    },
    { rule: 'cuts at a paragraph break', text: 'Line one\n\nLine two', chunks: ['Line one', 'Line two'] },
    {
      rule: 'flushes text with no boundary at the end',
      text: 'no punctuation at all',
      chunks: ['no punctuation at all'],
    },
    {
      rule: 'treats a period in a time as part of the number',
      text: 'Your slot is at 10.30 tomorrow. See you.',
      chunks: ['Your slot is at 10.30 tomorrow.', 'See you.'],
    },
  ];

  for (const row of table) {
    it(`${row.rule} (one token per character)`, () => {
      expect(run(chars(row.text))).toEqual(row.chunks);
    });
  }

  it('gives the same first chunk however the text is split into tokens', () => {
    const text = 'Sure thing, I can book that for you. It costs $1,200.50 in total.';
    const expected = run(chars(text))[0];
    for (let cut = 1; cut < text.length; cut++) {
      expect(run([text.slice(0, cut), text.slice(cut)])[0], `cut at ${cut}`).toBe(expected);
    }
  });

  it('loses no text whichever way the stream is split', () => {
    const text = 'Hello Dr. Lee, your total is $3.50. Visit example.com. Bye!';
    for (let cut = 1; cut < text.length; cut++) {
      expect(run([text.slice(0, cut), text.slice(cut)]).join(' '), `cut at ${cut}`).toBe(text);
    }
  });

  it('cuts a run with no boundary at its last space once it grows too long', () => {
    const chunker = new SpeakableChunker({ maxChunkChars: 20 });
    expect(run(['aaaa bbbb cccc dddd eeee ffff'], chunker)).toEqual(['aaaa bbbb cccc dddd', 'eeee ffff']);
  });

  it('starts fresh after reset, so an interrupted reply leaves nothing behind', () => {
    const chunker = new SpeakableChunker();
    chunker.push('Half a sent');
    chunker.reset();
    expect(run(['New reply. Done.'], chunker)).toEqual(['New reply.', 'Done.']);
  });
});
