import { describe, expect, it } from 'vitest';
import { isBackchannel } from '../../../src/call/caller/backchannel.ts';

describe('isBackchannel', () => {
  it.each([
    ['Uh-huh.', true],
    ['Okay, okay, okay, okay.', true],
    ['Mm-hmm, right.', true],
    ['I see.', true],
    ['Okay, but when?', false],
    ['no', false],
    ['', false],
    ['got it, thanks', false],
  ])('%j → %s', (text, expected) => {
    expect(isBackchannel(text)).toBe(expected);
  });

  it("takes an agent's own list instead of the default", () => {
    expect(isBackchannel('Vale.', ['vale', 'claro'])).toBe(true);
    expect(isBackchannel('Okay.', ['vale', 'claro'])).toBe(false);
  });
});
