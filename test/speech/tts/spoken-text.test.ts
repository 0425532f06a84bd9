// What the voice is given: numbers, money, dates, times, phone numbers and e-mail addresses as a
// person says them, and an agent's own pronunciations.
import { describe, expect, it } from 'vitest';
import { cardinal, ordinal, toSpokenText } from '../../../src/speech/tts/spoken-text.ts';

describe('text for the voice', () => {
  it.each([
    ['It costs $12.50 in total.', 'It costs twelve dollars and fifty cents in total.'],
    ['That is $1.', 'That is one dollar.'],
    ['Only $0.99!', 'Only ninety-nine cents!'],
    ['The fee is $1,200.', 'The fee is one thousand two hundred dollars.'],
    ['A grant of $2.5 million', 'A grant of two point five million dollars'],
    ['€5 or £3.20', 'five euros or three pounds and twenty pence'],
    ['Call +1 415 555 0100 now', 'Call plus one, four one five, five five five, zero one zero zero now'],
    ['Call +14155550100.', 'Call plus one, four one five, five five five, zero one zero zero.'],
    ['Our number is (415) 555-0100.', 'Our number is four one five, five five five, zero one zero zero.'],
    ['or 415-555-0100', 'or four one five, five five five, zero one zero zero'],
    ['Write to ann.lee@example.com today.', 'Write to ann dot lee at example dot com today.'],
    ['See you at 3:30 pm.', 'See you at three thirty p m.'],
    ['Open 9am to 5 p.m.', 'Open nine a m to five p m.'],
    ['Starts at 10:05.', 'Starts at ten oh five.'],
    ['At 5 p.m. tomorrow we close.', 'At five p m tomorrow we close.'],
    ['The train leaves at 15:00.', 'The train leaves at fifteen hundred.'],
    ['Come at 3:00 tomorrow', "Come at three o'clock tomorrow"],
    ['Booked for 2026-11-24.', 'Booked for November twenty-fourth, twenty twenty-six.'],
    ['Due 12/1/2025', 'Due December first, twenty twenty-five'],
    ['on November 3 at noon', 'on November third at noon'],
    ['on Nov 22nd', 'on November twenty-second'],
    ['the 1st and the 23rd', 'the first and the twenty-third'],
    ['since 1999', 'since nineteen ninety-nine'],
    ['in 2005', 'in two thousand five'],
    ['Your code is DEMO-5098.', 'Your code is DEMO five zero nine eight.'],
    ['Order 123456789 shipped', 'Order one two three four five six seven eight nine shipped'],
    ['We have 3 rooms and 1,234 guests', 'We have three rooms and one thousand two hundred thirty-four guests'],
    ['Pi is about 3.14', 'Pi is about three point one four'],
    ['A 15% discount', 'A fifteen percent discount'],
    ['Tom & Jerry', 'Tom and Jerry'],
    ['Nothing to change here.', 'Nothing to change here.'],
  ])('%s', (text, spoken) => {
    expect(toSpokenText(text)).toBe(spoken);
  });

  it("says an agent's pronunciations for whole words, ignoring case", () => {
    const pronunciation = [
      { word: 'Nginx', replacement: 'engine x' },
      { word: 'SQL', replacement: 'sequel' },
    ];
    expect(toSpokenText('We run nginx and SQL; not SQLite.', pronunciation)).toBe(
      'We run engine x and sequel; not SQLite.',
    );
  });

  it('reads cardinals and ordinals', () => {
    expect([0, 7, 13, 20, 42, 100, 101, 999, 1000, 1001, 20_000, 1_000_000, 1_234_567].map(cardinal)).toEqual([
      'zero',
      'seven',
      'thirteen',
      'twenty',
      'forty-two',
      'one hundred',
      'one hundred one',
      'nine hundred ninety-nine',
      'one thousand',
      'one thousand one',
      'twenty thousand',
      'one million',
      'one million two hundred thirty-four thousand five hundred sixty-seven',
    ]);
    expect([1, 2, 3, 4, 5, 8, 9, 12, 20, 21, 30, 100].map(ordinal)).toEqual([
      'first',
      'second',
      'third',
      'fourth',
      'fifth',
      'eighth',
      'ninth',
      'twelfth',
      'twentieth',
      'twenty-first',
      'thirtieth',
      'one hundredth',
    ]);
  });
});
