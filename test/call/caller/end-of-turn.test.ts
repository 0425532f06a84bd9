import { describe, expect, it } from 'vitest';
import { AGENT_DEFAULTS } from '../../../src/agents/schema.ts';
import {
  endOfTurnPolicy,
  promptNumberKinds,
  MODEL_TURN_FALLBACK_MS,
  recogniserDecides,
  SemanticEndOfTurn,
  SilenceEndOfTurn,
  turnShape,
} from '../../../src/call/caller/end-of-turn.ts';

describe('SilenceEndOfTurn', () => {
  it('waits endpointing_ms from the speech end, less the silence the VAD already took to report it', () => {
    const policy = new SilenceEndOfTurn(500);
    expect(policy.waitMs({ silentMs: 0, words: null })).toBe(500);
    expect(policy.waitMs({ silentMs: 200, words: 'Hello there.' })).toBe(300);
  });

  it('ends the turn at once when the VAD reported the pause after more silence than endpointing_ms', () => {
    expect(new SilenceEndOfTurn(500).waitMs({ silentMs: 550, words: null })).toBeLessThan(1);
  });
});

describe('endOfTurnPolicy', () => {
  it('with the model’s own turn detection, silence ends a turn only as the fallback for one the model let go by', () => {
    const policy = endOfTurnPolicy({ endpointing_ms: 500, llm: { turn_detection: 'model' } });
    expect(policy.waitMs({ silentMs: 0, words: 'What time do you open?' })).toBe(MODEL_TURN_FALLBACK_MS);
    expect(endOfTurnPolicy({ endpointing_ms: 500, llm: { turn_detection: 'service' } })).toBeInstanceOf(
      SemanticEndOfTurn,
    );
  });

  it("asks for the language model of the caller's language, and reads the prompt's number lengths", () => {
    const asked: string[] = [];
    const model = { probability: () => 0.01 };
    const policy = endOfTurnPolicy(
      { endpointing_ms: 500, stt: { language: 'en-GB' }, system_prompt: 'Order numbers have 6 digits.' },
      (language) => (asked.push(language), model),
    );
    expect(asked).toEqual(['en-GB']);
    expect(policy.waitMs({ silentMs: 0, words: 'The room was very.' })).toBe(AGENT_DEFAULTS.endpointingMaxMs);
    expect(policy.waitMs({ silentMs: 0, words: 'My order number is 1 2 3 4 5 6' })).toBe(
      AGENT_DEFAULTS.endpointingMinMs,
    );
  });

  it('gives no English model to a caller of another language', () => {
    const policy = endOfTurnPolicy({ endpointing_ms: 500, stt: { language: 'de-DE' } });
    expect(policy.waitMs({ silentMs: 0, words: 'The room was very.' })).toBe(AGENT_DEFAULTS.endpointingMinMs);
  });
});

describe('turnShape', () => {
  it.each([
    ['What time do you open?', 'finished'],
    ['I would like to book an appointment.', 'finished'],
    ['Yes', 'finished'],
    ['no thanks', 'finished'],
    ['I want to book a table and', 'unfinished'],
    ['Um,', 'unfinished'],
    ['So I was thinking, uh', 'unfinished'],
    ['My card number is 4 1 5 2', 'unfinished'],
    ['My phone number is 415.', 'unfinished'],
    ['My phone number is 5550123.', 'finished'], // a whole local number
    ['My phone number is five five five, zero one two three.', 'finished'],
    ['my phone number is 415 555 0123', 'finished'], // whole: the answer given, full stop or not
    ['My phone number is 415 555 01', 'unfinished'],
    ['My card number is 4152 7789.', 'unfinished'], // eight of sixteen
    ['The zip code is 9 4 1 0 7.', 'finished'],
    // A number of no known length may be whole: the words do not tell (the wait is this caller's own pause).
    ['My account number is 4279.', 'number'],
    ['four one five five', 'number'],
    ['My order number is 2 7.', 'unfinished'], // shorter than any account, order or reference number
    ['I need eggs, milk, and', 'unfinished'],
    ['I would like to…', 'unfinished'],
    ['My name is John Smith,', 'pausing'],
    // The last mark decides: a comma after a short answer or an exclamation is the voice going on.
    ['Great,', 'pausing'],
    ['Okay, thanks,', 'pausing'],
    ['Wow!,', 'pausing'],
    ['Great.', 'finished'],
    ['Wow!', 'finished'],
    ['No thank you.', 'finished'],
    ['That works for me.', 'finished'],
    ['my name is john smith', 'unsure'],
    ['', 'unsure'],
    // Digits as a recogniser may group them.
    ['My card number is 415-27789', 'unfinished'], // eight of sixteen
    ['My phone number is 555-0123.', 'finished'], // a whole local number
    ['My account number is 2-2.', 'unfinished'],
    // A short word glued onto the last one by a hyphen is still the last word.
    ['I want to book a cleaning-and.', 'unfinished'],
    ['Can I get a check-up.', 'finished'],
    ["I'd like a check-in.", 'finished'],
    // A trailing "and" as Moonshine mishears it, where no article or possessive owns the word.
    ['I would like a haircut end.', 'unfinished'],
    ['I want to book a cleaning-hand.', 'unfinished'],
    ['I need a new filter hint.', 'unfinished'],
    ["I'll wait until the end.", 'finished'],
    ['On the other hand.', 'finished'],
    ['Can you give me a hint?', 'finished'],
    // Fillers as Moonshine spells them.
    ['I would like, ah,', 'unfinished'],
    ["I'd like to come in em.", 'unfinished'],
    // An ending that wants its complement, the "um" after it dropped.
    ['Could you tell me?', 'unfinished'],
    ['I was wondering.', 'unfinished'],
    ['So I need.', 'unfinished'],
    ['Can you help me?', 'finished'],
    ["That's all I need.", 'finished'],
    ["Don't ask me.", 'finished'],
    // Ten digits are a phone number's whole length where no kind is named; other lengths wait.
    ['It is 555 123 4567', 'finished'],
    ['It is five five five, one two three, four five', 'unfinished'], // between a local and a full phone number
    ['The tracking number is 1 2 7 7 4 4 9 0.', 'number'], // named, and of no known length
    // Moonshine often writes "number is" as "numbers": still a number named, so two digits are its start.
    ['The tracking numbers one, two.', 'unfinished'],
    // Digits the recogniser wrote as words that sound alike, between digits.
    ['My pin is four, seven to nine.', 'finished'],
    ['The code is six-six-one.', 'number'], // digits hyphenated as words are digits: a number of no known length
    ['The last four or six, six, one, two.', 'finished'],
    ['The last four are three three eight one.', 'finished'], // a word after "last four" is no digit
    // A lone word inside a number read out is a digit misheard ("zero" as "little", "eight" as "it"), a filler none.
    ['You can reach me at four, one, five, six, six, two, little one, eight, seven.', 'finished'],
    ['My callback number is five, five, five, two, one, it, four, four, three, nine.', 'finished'],
    ['You can reach me at five five five, um, one two one two.', 'finished'], // seven digits: a local number
    // Moonshine's "oh" is often "go"; a sound-alike straight after the verb that brings a number in is its first digit.
    ['Please call me back on six five go.', 'unfinished'],
    ['Please call me back on six five o.', 'unfinished'],
    ['The policy number is five-go-go.', 'number'],
    ['My extension is too one for.', 'number'],
    ['My order is to go.', 'finished'],
    ['I work from nine to', 'unfinished'],
    // A card "ends in" its last four.
    ['The card ends in four four one two.', 'finished'],
    ['The card ends in four four', 'unfinished'],
    ['My 6-digit code is 1 2 3 4 5 6', 'finished'],
    ['My six digit code is 1 2 3 4', 'unfinished'],
    // A callback number is a phone number, and so is "my number" alone.
    ['My own number is five, five, five.', 'unfinished'],
    ['My number is 555 123 4567.', 'finished'],
    ['My order number is 1 2 3.', 'number'],
    ['You can reach me at 555-123-4567', 'finished'],
    ['My callback number is two zero six, five five five', 'unfinished'],
  ])('%j reads as %s', (words, shape) => {
    expect(turnShape(words)).toBe(shape);
  });

  describe("against the agent's question", () => {
    it.each([
      ['What is the best number to reach you?', 'five five five, one two three, four five six seven.', 'finished'],
      ['What is the best number to reach you?', 'five five five, one two three.', 'unfinished'],
      ['Could you read me the last four digits of the card?', 'six six one two', 'finished'],
      ['We take any card. And your zip code?', '9 4 1 0 7', 'finished'],
      ['What is your account number?', '4 2 7 9.', 'number'], // no length known for an account
      // A question that only mentions a number leaves a short answer alone.
      ['How many people, what number should I book for?', 'Four.', 'finished'],
    ])('after %j, %j reads as %s', (asked, words, shape) => {
      expect(turnShape(words, { asked })).toBe(shape);
    });

    it("the caller's own words name the kind first", () => {
      expect(turnShape('My zip code is 9 4 1 0 7.', { asked: 'What is your phone number?' })).toBe('finished');
    });
  });

  describe('words that only open a sentence, after a statement of the agent', () => {
    const asked = 'Sure, that works.';
    it.each([
      ['Besides,', 'unfinished'], // a word that leads into what follows
      ['Now.', 'unfinished'],
      ['My neighbor.', 'unfinished'], // a determiner and its noun: a subject waiting for its verb
      ['The invoice.', 'unfinished'],
      ["If you know what's good for you,", 'unfinished'], // a subordinate clause with no main clause
      ["Now, if you don't mind,", 'unfinished'],
      ['Okay, because I am moving.', 'unfinished'],
      // Whole turns.
      ['My pleasure.', 'finished'],
      ['Your welcome.', 'finished'],
      ['I paid, although it was late.', 'finished'], // the main clause came first
      ['If so, please do.', 'finished'], // a main clause after it
      ['Sure.', 'finished'],
      ['Look at this.', 'finished'],
    ])('%j reads as %s', (words, shape) => {
      expect(turnShape(words, { asked })).toBe(shape);
    });

    it('after a question they may be the answer', () => {
      expect(turnShape('My neighbor.', { asked: 'Who saw it happen?' })).toBe('finished');
      expect(turnShape('Because I am moving.', { asked: 'Why do you want to cancel?' })).toBe('finished');
    });

    it('before the agent said anything they may be how the callee answered the phone', () => {
      expect(turnShape('The Smiths.', { asked: null })).toBe('finished');
      expect(turnShape('Well,')).toBe('pausing');
    });

    it("a question of the caller's own is whole", () => {
      expect(turnShape('Now?', { asked })).toBe('finished');
    });
  });

  describe('a number of no known length, by the digits read since the pause before', () => {
    it.each([
      // No pause before in this turn: the run is all of it.
      ['My member ID is three one one eight four.', null, 'finished'],
      ['The code on the letter is eight one five three.', null, 'finished'],
      ['My order number is 1 2 3.', null, 'number'], // three digits may be a first group
      // A pause after the first group: the run is what came after it.
      ['The policy number is five oh oh eight three seven two.', 'The policy number is five oh oh.', 'finished'],
      ['The tracking number is one two seven, seven four four.', 'The tracking number is one two seven.', 'number'],
      ['My account number is 4 4 7 9.', 'My account number is 4 4.', 'number'],
      ['To tracking numbers 127, 744, 90.', 'Detracking numbers one, two, seven.', 'finished'],
      // A pause after words, not digits: every digit is of the run.
      ['Room 2 0 4 1.', 'Um, it is', 'finished'],
      // The two readings disagree on the digits: no run is known.
      ['The code is 8 1 5 3.', 'The code is 8 1 5 3 9 9.', 'number'],
    ])('%j after a pause at %j reads as %s', (words, earlierWords, shape) => {
      expect(turnShape(words, { earlierWords })).toBe(shape);
    });

    it('where the pauses are not known, a run of digits is no evidence', () => {
      expect(turnShape('My member ID is three one one eight four.')).toBe('number');
    });

    it('a named length still wins over the run', () => {
      expect(turnShape('My phone number is 5 5 5 1.', { earlierWords: null })).toBe('unfinished');
    });
  });

  describe("with the lengths the agent's prompt gives", () => {
    const promptKinds = promptNumberKinds(
      "You book repairs. Order numbers have 6 digits. Ask for the caller's eight-digit member ID. A 4 digit code unlocks the door.",
    );

    it.each([
      ['My order number is four five six.', 'unfinished'], // three of the prompt's six
      ['My order number is four five six, one two three.', 'finished'],
      ['Member ID 1234 5678', 'finished'],
      ['The code is 1 2 3 4', 'finished'],
    ])('%j reads as %s', (words, shape) => {
      expect(turnShape(words, { promptKinds })).toBe(shape);
    });

    it('names the kind by the word before "number", "code" or "ID"', () => {
      expect(promptKinds.map(([name, digits]) => [name.source, digits])).toEqual([
        ['\\bmember\\b', [8]],
        ['\\bcode\\b', [4]],
        ['\\border\\b', [6]],
      ]);
    });

    it('the question names the kind, the prompt its length', () => {
      expect(turnShape('one two three four five six', { asked: 'What is your order number?', promptKinds })).toBe(
        'finished',
      );
    });
  });
});

describe('turnShape with a language model', () => {
  /** A model that finds a sentence ending on these words unlikely, and on any other likely. */
  const unlikelyAfter = (...last: string[]) => ({
    probability: (w: readonly string[]) => (last.includes(w.at(-1)!) ? 0.01 : 0.3),
  });
  const sentenceEnds = unlikelyAfter('very', 'how', 'would', "don't", 'what');

  it.each([
    ['The room was very.', 'unfinished'], // an ending no rule names, which a sentence seldom has
    ['Tell me how', 'unfinished'],
    ['My sister would.', 'unfinished'],
    ['My daughter has a fever.', 'finished'],
    ['Tell me how?', 'finished'], // a question the recogniser heard as one
    ["No, I don't.", 'finished'], // an elliptical answer
    ['Yes, I would.', 'finished'],
    ['What?', 'finished'],
    ['Very.', 'finished'], // a single word is left to the rules
  ])('%j reads as %s', (words, shape) => {
    expect(turnShape(words, { sentenceEnds })).toBe(shape);
  });

  const afterNumbers = unlikelyAfter(...'two three four six fifteen 6'.split(' '));
  it.each([
    ['We would like a table for six.', 'finished'], // a count after a preposition: the model is not asked
    ['I have an appointment at three.', 'finished'], // a time
    ['The apartment is four.', 'finished'], // a value
    ['Can we make it for fifteen?', 'finished'],
    ['A table for 6.', 'finished'],
    ['A table for two,', 'pausing'], // the recogniser's mark still decides
    ['There are three.', 'unfinished'], // a count that wants its noun ("of us") is the model's to read
    ['I have two.', 'unfinished'],
  ])('%j reads as %s: a number after a preposition or "is" is a time, a count or a value', (words, shape) => {
    expect(turnShape(words, { sentenceEnds: afterNumbers })).toBe(shape);
  });

  it('rules that decide come first: a whole number, a short answer', () => {
    const never = { probability: () => 0 };
    expect(turnShape('My zip code is 9 4 1 0 7.', { sentenceEnds: never })).toBe('finished');
    expect(turnShape('Yes please.', { sentenceEnds: never })).toBe('finished');
  });
});

describe('SemanticEndOfTurn', () => {
  const policy = new SemanticEndOfTurn({ minMs: 250, maxMs: 2000, unsureMs: 500 });

  it('waits max_ms after an ending its language model finds unlikely', () => {
    const withModel = new SemanticEndOfTurn({
      minMs: 250,
      maxMs: 2000,
      unsureMs: 500,
      sentenceEnds: { probability: (w) => (w.at(-1) === 'very' ? 0.01 : 0.3) },
    });
    expect(withModel.waitMs({ silentMs: 200, words: 'The room was very.' })).toBe(1800);
    expect(withModel.waitMs({ silentMs: 200, words: 'The room was cold.' })).toBe(50);
  });

  it('answers a finished sentence after min_ms, waits max_ms after an unfinished one, endpointing_ms when the words do not tell', () => {
    expect(policy.waitMs({ silentMs: 200, words: 'What time do you open?' })).toBe(50);
    expect(policy.waitMs({ silentMs: 200, words: 'I would like to book and' })).toBe(1800);
    expect(policy.waitMs({ silentMs: 200, words: 'my name is john smith' })).toBe(300);
    expect(policy.waitMs({ silentMs: 200, words: 'My name is John Smith,' })).toBe(1425); // 3/4 of the way to max_ms
  });

  it('gives a caller who pauses mid-turn their own pause where the words do not tell, up to max_ms', () => {
    const paceMs = 1200;
    expect(policy.waitMs({ silentMs: 200, words: 'my name is john smith', paceMs })).toBe(1000);
    expect(policy.waitMs({ silentMs: 200, words: 'My name is John Smith,', paceMs: 1800 })).toBe(1600); // over 1,625
    expect(policy.waitMs({ silentMs: 200, words: 'my name is john smith', paceMs: 5000 })).toBe(1800);
    // A finished sentence and a short answer keep min_ms; a pace shorter than the wait changes nothing.
    expect(policy.waitMs({ silentMs: 200, words: 'What time do you open?', paceMs })).toBe(50);
    expect(policy.waitMs({ silentMs: 200, words: 'Yes.', paceMs })).toBe(50);
    expect(policy.waitMs({ silentMs: 200, words: 'my name is john smith', paceMs: 300 })).toBe(300);
  });

  it("takes a callee's first few words as picking up the phone, unless they say more is coming", () => {
    const pickedUp = true;
    expect(policy.waitMs({ silentMs: 200, words: 'Smith residence,', pickedUp })).toBe(50);
    expect(policy.waitMs({ silentMs: 200, words: 'to the loaf', pickedUp })).toBe(50); // a "Hello?" misheard
    expect(policy.waitMs({ silentMs: 200, words: 'Smith residence,' })).toBe(1425); // not picking up: a trailing comma
    expect(policy.waitMs({ silentMs: 200, words: 'Hello, this is Maria', pickedUp })).toBe(300); // more than a hello
    expect(policy.waitMs({ silentMs: 200, words: 'Hello, um', pickedUp })).toBe(1800);
    expect(policy.waitMs({ silentMs: 200, words: '', pickedUp })).toBe(300); // no words: no greeting
  });

  it("waits as long as this caller's own pauses between groups of digits after a number of no known length, max_ms after half a known one", () => {
    const account = 'My account number is 4 2 7 9.';
    expect(policy.waitMs({ silentMs: 200, words: account })).toBe(300); // the unsure wait
    expect(policy.waitMs({ silentMs: 200, words: account, numberPaceMs: 900 })).toBe(700);
    // Their pauses to think are not their pauses between groups.
    expect(policy.waitMs({ silentMs: 200, words: account, paceMs: 1500 })).toBe(300);
    expect(policy.waitMs({ silentMs: 200, words: 'my name is john smith', paceMs: 1500, numberPaceMs: 900 })).toBe(
      1300,
    );
    expect(policy.inDoubt({ silentMs: 200, words: account })).toBe(true);
    expect(policy.waitMs({ silentMs: 200, words: 'My phone number is 4 2 7 9.', numberPaceMs: 900 })).toBe(1800);
  });

  it('is in doubt where it would end the turn short of max_ms', () => {
    expect(policy.inDoubt({ silentMs: 200, words: 'What time do you open?' })).toBe(true);
    expect(policy.inDoubt({ silentMs: 200, words: 'my name is john smith' })).toBe(true);
    expect(policy.inDoubt({ silentMs: 200, words: 'I would like to book and' })).toBe(false);
  });

  it('waits as the silence rule does until the recogniser has read the pause', () => {
    expect(policy.waitMs({ silentMs: 200, words: null })).toBe(300);
  });

  it('waits up to max_ms for a reading under way, and as unsure once it came back with no words', () => {
    expect(policy.waitMs({ silentMs: 200, words: null, wordsPending: true })).toBe(1800);
    expect(policy.waitMs({ silentMs: 700, words: '', wordsPending: false })).toBe(-200);
  });
});

describe("SemanticEndOfTurn with the recogniser's own end of turn", () => {
  const policy = new SemanticEndOfTurn({ minMs: 250, maxMs: 2000, unsureMs: 500 });

  it('a sure verdict ends a turn the words leave open (unsure or a trailing comma) after the short wait', () => {
    for (const words of ['my name is john smith', 'My name is John Smith,']) {
      expect(policy.waitMs({ silentMs: 0, words, recogniserEnded: { confidence: 0.8 } })).toBe(250);
      // A silence-based endpoint gives no figure, and counts.
      expect(policy.waitMs({ silentMs: 0, words, recogniserEnded: { confidence: null } })).toBe(250);
    }
  });

  it('words that say more is coming outweigh it: a caller mid-sentence ("my name is", a trailing "and") keeps the longest wait', () => {
    for (const words of ['I want to book a table and', 'my name is']) {
      expect(policy.waitMs({ silentMs: 0, words, recogniserEnded: { confidence: 0.99 } })).toBe(2000);
      expect(policy.waitMs({ silentMs: 0, words, recogniserEnded: { confidence: null } })).toBe(2000);
    }
  });

  it('an unsure verdict (under the confidence the policy counts) changes nothing', () => {
    const words = 'my name is john smith';
    expect(policy.waitMs({ silentMs: 0, words, recogniserEnded: { confidence: 0.2 } })).toBe(
      policy.waitMs({ silentMs: 0, words }),
    );
    expect(policy.waitMs({ silentMs: 0, words: 'I need eggs, milk, and', recogniserEnded: { confidence: 0.2 } })).toBe(
      2000,
    );
  });

  it('finished words keep the short wait whatever the recogniser says, and pending words are still waited for', () => {
    expect(policy.waitMs({ silentMs: 100, words: 'That works for me.', recogniserEnded: null })).toBe(150);
    expect(policy.waitMs({ silentMs: 0, words: null, wordsPending: true, recogniserEnded: { confidence: 1 } })).toBe(
      2000,
    );
  });

  it('the silence rule (endpointing mode silence) ignores the verdict', () => {
    expect(new SilenceEndOfTurn(500).waitMs({ silentMs: 0, words: 'x', recogniserEnded: { confidence: 1 } })).toBe(500);
  });
});

describe('recogniserDecides', () => {
  const policy = new SemanticEndOfTurn({ minMs: 250, maxMs: 2000, unsureMs: 500 });

  it("is true only when the recogniser's verdict makes the wait shorter than the words and the silence alone", () => {
    const sure = { confidence: null };
    // Words that do not tell: the verdict turns the unsure 500 ms into min_ms.
    expect(recogniserDecides(policy, { silentMs: 0, words: 'my name is john smith', recogniserEnded: sure })).toBe(
      true,
    );
    // Finished words answer after min_ms anyway; unfinished ones keep max_ms; no verdict decides nothing.
    expect(recogniserDecides(policy, { silentMs: 0, words: 'That works for me.', recogniserEnded: sure })).toBe(false);
    expect(recogniserDecides(policy, { silentMs: 0, words: 'I want to book and', recogniserEnded: sure })).toBe(false);
    expect(recogniserDecides(policy, { silentMs: 0, words: 'my name is john smith', recogniserEnded: null })).toBe(
      false,
    );
    // A verdict under the confidence the policy counts changes nothing.
    expect(
      recogniserDecides(policy, { silentMs: 0, words: 'my name is john smith', recogniserEnded: { confidence: 0.2 } }),
    ).toBe(false);
  });

  it('is false when the silence already covered both waits: the turn ends now either way', () => {
    expect(
      recogniserDecides(policy, { silentMs: 600, words: 'my name is john smith', recogniserEnded: { confidence: 1 } }),
    ).toBe(false);
  });

  it('is false under the silence rule, which ignores the verdict', () => {
    expect(
      recogniserDecides(new SilenceEndOfTurn(500), { silentMs: 0, words: 'x', recogniserEnded: { confidence: 1 } }),
    ).toBe(false);
  });
});
