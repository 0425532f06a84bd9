// When the caller's turn is over. At each pause the policy says how much longer to wait for more
// words. Silence alone waits the agent's endpointing_ms every time; the semantic policy also
// reads the words so far (the recogniser's reading at the pause): after a finished sentence or
// question it answers after a short pause, after a trailing "and", an "um" or a number half read
// out it waits up to a couple of seconds for the rest. A number is whole at the length the caller,
// the agent's question or its prompt gives it, or when read in one long run since the caller's last
// pause; a language model tells endings no rule names; and
// where the words do not tell, the wait covers this caller's own pauses (caller-pace.ts): after a
// number of no known length, their pauses between groups of digits.

import { AGENT_DEFAULTS, type AgentConfig } from '../../agents/schema.ts';
import { englishSentenceEnds, type SentenceEnds } from '../../speech/stt/pocketsphinx/sentence-ends.ts';

export interface CallerPause {
  /** How long the caller has already been silent (the VAD reports a pause after the fact), ms. */
  silentMs: number;
  /** The recogniser's reading of the turn up to this pause; null until it has one. */
  words: string | null;
  /**
   * A reading of this pause is under way (asked for when the VAD heard it): the words will come.
   * A recogniser slower than the unsure wait (a larger model, a busy machine) would otherwise have
   * the turn ended before its words were known.
   */
  wordsPending?: boolean | undefined;
  /**
   * The recogniser's own verdict that the turn is over (Deepgram's speech_final or UtteranceEnd,
   * AssemblyAI's end_of_turn), with its confidence where it gives one; absent or null when it has not said so.
   */
  recogniserEnded?: { confidence: number | null } | null | undefined;
  /** The agent's last words before this turn (its question, as far as the caller heard it); null before it spoke. */
  asked?: string | null | undefined;
  /**
   * The recogniser's reading at this turn's latest earlier pause, one the caller spoke on from; null when the caller
   * has not paused in this turn before. Absent where the pauses are not known.
   */
  earlierWords?: string | null | undefined;
  /** The silence that covers this caller's own pauses within a turn (CallerPace); null until one was heard. */
  paceMs?: number | null | undefined;
  /**
   * The silence that covers this caller's pauses between groups of digits (CallerPace over those pauses alone); null
   * until one was heard. A number of no known length waits this, not their pauses to think.
   */
  numberPaceMs?: number | null | undefined;
  /** The callee of an outbound call speaking before the agent said anything: how they answered the phone. */
  pickedUp?: boolean | undefined;
}

export interface EndOfTurnPolicy {
  /** Milliseconds still to wait from now; under 1 ends the turn at once. Speech in the meantime resumes the turn. */
  waitMs(pause: CallerPause): number;
  /**
   * Whether the policy would end the turn at this pause before its longest wait: the words looked finished or did not
   * tell. A caller who speaks on from such a pause shows their pace (CallerPace). Absent: the policy keeps no pace.
   */
  inDoubt?(pause: CallerPause): boolean;
}

/** The agent's `endpointing_ms` of silence ends the turn. */
export class SilenceEndOfTurn implements EndOfTurnPolicy {
  constructor(private readonly endpointingMs: number) {}

  waitMs(pause: CallerPause): number {
    return this.endpointingMs - pause.silentMs;
  }
}

/**
 * `pausing`: a trailing comma, the recogniser hearing a voice that did not fall at the end. `number`: digits of a
 * number of no known length, which may be whole or one group of more.
 */
export type TurnShape = 'finished' | 'unfinished' | 'pausing' | 'unsure' | 'number';

/**
 * Words after which a person has not finished: conjunctions, fillers, articles, prepositions, a subject waiting for its
 * verb.
 */
const CARRY_ON = new Set(
  (
    'and or but so because cause um umm uhm uh uhh er erm ah em hm hmm mm like the a an to of with for from my your our their his ' +
    "is are was were am be been at in on into onto by about as than then if that which who whose where when while i we he she they it's i'm i'd " +
    "we're you're they're there's let just maybe also plus and/or whether since until unless after before during between over under"
  ).split(' '),
);
/**
 * Turns that want a complement ("Could you tell me?" … "when you close"): a recogniser that drops
 * the "um" after them makes them look finished. A verb of telling that ends the turn, or a whole
 * turn that is only a wish ("I would like."); not "That's all I need.", which is whole.
 */
const WANTS_MORE = [
  /\b(?:tell|show|let) (?:me|us)$/,
  /^(?:(?:so|and|but|well|um|uh|okay|ok|yeah|yes|hi|hello) )*(?:i'd like|i would like|i want|i need|i was wondering)$/,
];
/**
 * How Moonshine writes a trailing "and" it did not hear as one: read alone at a pause, "and" came
 * back as "end", "hand" or "hint" about as often as "and" (flite's voices, 16 phrases held out from
 * bench:turns). Without an article or possessive before them they are rarely a turn's last word.
 */
const SOUNDS_LIKE_AND = new Set(['end', 'hand', 'hint']);
const OWNERS = new Set(
  'the a an my your his her our their this that one each either second left right other'.split(' '),
);
/**
 * Carry-on words a recogniser glues onto the word before with a hyphen (particles such as "in" or "up" make compounds
 * instead).
 */
const GLUED_CARRY_ON = new Set('and or but so because um uh ah er em the a an to of end hand'.split(' '));
/** A whole turn of one or two of these is an answer, not a start. */
const SHORT_ANSWERS = new Set(
  'yes yeah yep yup no nope nah okay ok sure right correct thanks thank you bye goodbye good-bye hello hi please fine great perfect exactly absolutely'.split(
    ' ',
  ),
);
/**
 * After a statement of the agent's, words that only open a sentence (opensOnly): a word that leads into what follows, a
 * determiner with the one word after it, a clause that hangs on another.
 */
const LEADS_IN = new Set(
  'besides now well anyway anyways actually honestly basically look listen however meanwhile otherwise also'.split(' '),
);
const DETERMINERS = new Set('the a an my your his her our their'.split(' '));
/** "My pleasure.", "Your welcome." (as a recogniser may write it): a determiner and a word that are a whole turn. */
const WHOLE_AFTER_DETERMINER = new Set('pleasure bad apologies goodness gosh god welcome end best'.split(' '));
const SUBORDINATORS = new Set('if when whenever because although unless while whereas'.split(' '));
/** "o" is how Moonshine often writes a digit said "oh" ("six five o three"). */
const NUMBER_WORDS = new Set('zero oh o one two three four five six seven eight nine ten eleven twelve'.split(' '));
/**
 * How a recogniser writes a digit it misheard as a word ("four, seven to nine"; Moonshine often writes "oh" as "go":
 * "five-go-go", "six five go"): a digit only among digits, where the words themselves would not stand.
 */
const DIGIT_SOUNDALIKES = new Set('to too for fore free won ate go'.split(' '));
/** Said between groups of digits and no digit: "five five five, um, one two …". */
const FILLERS = new Set('um umm uhm uh uhh er erm ah em hm hmm mm'.split(' '));
/** Verbs that bring a number in: a sound-alike right after one, and before a digit, is the number's first digit. */
const INTRODUCES_NUMBER = new Set(['is', 'was', 'are', "it's"]);
/**
 * Where digits are read out in pieces: the next piece is likely coming. "numbers" too: Moonshine often writes "number
 * is" as one word ("The tracking numbers one, two, seven.").
 */
const NUMBER_CONTEXT =
  /\b(numbers?|card|phone|account|code|zip|postcode|digits|pin|reference|order|extension|policy|id)\b/;

/** Digits as a recogniser may write them: "4152", "555-0123", "415.555". */
const DIGIT_GROUPS = /^\d+(?:[-./]\d+)*$/;
const isNumeric = (w: string): boolean => DIGIT_GROUPS.test(w) || NUMBER_WORDS.has(w);

/** A kind of number, by the words that name it, and how many digits make it whole. */
export type NumberKind = readonly [name: RegExp, digits: readonly number[]];

/** Where the kind of number is named, how many digits make it whole: until then more is coming. First match wins. */
const NUMBER_KINDS: readonly NumberKind[] = [
  // A card or account "ends in" its last four.
  [/\b(?:last (?:four|4)|(?:ends|ending) (?:in|with))\b/, [4]],
  [/\b(?:security code|cvv|cvc)\b/, [3, 4]],
  [/\b(?:social security|ssn)\b/, [9]],
  [
    // "My number" alone is the caller's phone number.
    /\b(?:phone|mobile|cell|telephone|callback|call back|call you back|call me|reach (?:me|you)|(?:contact|my|your|own) number)\b/,
    [7, 10, 11],
  ],
  [/\bcard\b/, [15, 16]],
  [/\b(?:zip|postcode|postal code)\b/, [5]],
  [/\bpin\b/, [4, 6]],
];

const COUNTS: Record<string, number> = Object.fromEntries(
  'one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty'
    .split(' ')
    .map((w, i) => [w, i + 1]),
);
const COUNT = String.raw`(\d{1,2}|${Object.keys(COUNTS).join('|')})`;
const countOf = (w: string): number => COUNTS[w] ?? Number(w);
/** A number said as a count or written in digits: "six", "fifteen", "6". */
const isCount = (w: string): boolean => isNumeric(w) || Object.hasOwn(COUNTS, w);
/** "a 6-digit code", "six digit order number": the length said outright. */
const SAID_LENGTH = new RegExp(String.raw`\b${COUNT}[- ]digits?\b`);

/**
 * Lengths the agent's prompt gives its numbers: "order numbers have 6 digits", "a six-digit member ID". Each names a
 * kind by the word before "number", "code" or "ID" (or that word itself), so the caller's or the agent's mention of it
 * is known to be whole at that length.
 */
export function promptNumberKinds(prompt: string): NumberKind[] {
  const text = prompt.toLowerCase();
  const kinds: NumberKind[] = [];
  const add = (word: string | undefined, count: string) => {
    const digits = countOf(count);
    if (word && digits > 0) kinds.push([new RegExp(String.raw`\b${word}\b`), [digits]]);
  };
  const noun = String.raw`(?:number|code|id|pin|reference)s?`;
  for (const m of text.matchAll(new RegExp(String.raw`\b${COUNT}[- ]digits? (?:([a-z]+) )?${noun}\b`, 'g')))
    add(m[2] ?? /([a-z]+)s?$/.exec(m[0])?.[1], m[1]!);
  for (const m of text.matchAll(
    new RegExp(
      String.raw`\b([a-z]+) ${noun} (?:are|is|has|have|contain|contains) (?:always |exactly )?${COUNT} digits?\b`,
      'g',
    ),
  ))
    add(m[1], m[2]!);
  return kinds;
}

/** How many digits make the number named in `words` whole: said outright, the prompt's kinds, then the usual ones. */
function wholeDigits(words: string, promptKinds: readonly NumberKind[]): readonly number[] | undefined {
  const said = SAID_LENGTH.exec(words);
  if (said) return [countOf(said[1]!)];
  return [...promptKinds, ...NUMBER_KINDS].find(([name]) => name.test(words))?.[1];
}

const TWO_DIGIT_WORDS = new Set(['ten', 'eleven', 'twelve']);
/** A number of this many digits is whole even unnamed: a North American phone number, with or without its leading 1. */
const PHONE_DIGITS = [10, 11];
/** A number this long is being read out, whatever the words around it ("5551234", not "2024"). */
const LONG_NUMBER_DIGITS = 7;
/** An account, order or reference number is at least this long: fewer digits after its name are a start. */
const IDENTIFIER_DIGITS = 3;
/**
 * Digits read in one run, with no pause, that make a number of no known length whole: people read a long number in
 * groups of two to four and pause between them, so a run this long is the whole number or its last group (a phone
 * number's last four). In every number of bench:turns' sets that the caller broke off at a pause, the part before
 * the pause was 2 or 3 digits ("five five five …", "four four …", "one two seven …").
 */
const WHOLE_RUN_DIGITS = 4;

/**
 * Digits read since the turn's previous pause, where it is known: all of them when the caller has not paused in the
 * turn before, those past the digits then heard when that pause came after digits. Undefined where the pauses are not
 * known, or the two readings do not agree on the digits.
 */
function digitsSincePause(digits: number, earlierWords: string | null | undefined): number | undefined {
  if (earlierWords === undefined) return undefined;
  const earlier = earlierWords === null ? [] : normalWords(earlierWords);
  const before = trailingDigits(earlier);
  return digits > before ? digits - before : undefined;
}

/**
 * Digits in the number the words end with ("five five five 0123" is 7; "ten" counts 2; "four seven to nine" 4). A word
 * a recogniser wrote inside a number read out is a digit it misheard: any lone word between two digits and more digits
 * before them ("four one five, six six two, little one, eight seven" is 10: Moonshine's "zero one"), a filler none.
 */
function trailingDigits(words: string[]): number {
  const digitLike = (w: string | undefined) => w !== undefined && (isNumeric(w) || DIGIT_SOUNDALIKES.has(w));
  /** Digits of each word taken, from the last word back. */
  const counted: number[] = [];
  let start = words.length;
  while (start > 0) {
    const w = words[start - 1]!;
    if (digitLike(w)) counted.push(DIGIT_GROUPS.test(w) ? w.replace(/\D/g, '').length : TWO_DIGIT_WORDS.has(w) ? 2 : 1);
    else if (counted.length > 0 && digitLike(words[start - 2]) && digitLike(words[start - 3]))
      counted.push(FILLERS.has(w) ? 0 : 1);
    else break;
    start--;
  }
  // A sound-alike counts only among digits ("call me back at to 5" is not a digit "to"), or as the first of them right
  // after the verb that brings the number in ("My extension is too one four").
  const introduced = INTRODUCES_NUMBER.has(words[start - 1] ?? '') && isNumeric(words[start + 1] ?? '');
  while (!introduced && start < words.length && DIGIT_SOUNDALIKES.has(words[start]!)) {
    start++;
    counted.pop();
  }
  return counted.reduce((sum, n) => sum + n, 0);
}

/** What a turn is read against besides its words. */
export interface TurnContext {
  /** The agent's last words before the turn: a number it asked for names the kind the caller's digits are. */
  asked?: string | null | undefined;
  /** Number kinds with the lengths the agent's prompt gives them (promptNumberKinds). */
  promptKinds?: readonly NumberKind[] | undefined;
  /** A language model's chance that a sentence ends after the words: endings no rule names. */
  sentenceEnds?: SentenceEnds | null | undefined;
  /** The reading at the turn's previous pause (CallerPause.earlierWords): where the digits since then began. */
  earlierWords?: string | null | undefined;
}

/**
 * Under this chance of a sentence ending after its last words, a turn the rules leave open is unfinished: set between
 * the unfinished first parts of bench:turns and bench:turn-words (the most likely 0.040, "the appointment is on") and
 * their finished phrases (the least likely question 0.055, "how long will it take"), digits aside.
 */
const SENTENCE_END_UNLIKELY = 0.05;
/**
 * Before a number that ends a turn, words that make it a time, a count or a value ("a table for six", "at three", "the
 * apartment is four"): a caller often stops there, but in written English a number is mostly followed by its noun, so
 * the language model finds such endings unlikely (0.02–0.08; under SENTENCE_END_UNLIKELY the turn waited max_ms). A
 * count that wants its noun ("there are three", "I have two") is left to the model.
 */
const VALUE_BEFORE = new Set('at for by around until till before after about past of from to is was be'.split(' '));
/**
 * An answer that leaves its verb out ("No, I don't.", "Yes, I would.", "It's not."): a written language model rarely
 * ends a sentence there, a caller often does.
 */
const ELLIPTICAL_ANSWER =
  /^(?:(?:yes|yeah|yep|no|nope|well|oh|sure|okay|ok|um|uh) )*(?:i|you|he|she|it|we|they|that|there) (?:am|is|are|was|were|do|does|did|have|has|had|will|would|can|could|should|shall|may|might|must|don't|doesn't|didn't|haven't|hasn't|hadn't|won't|wouldn't|can't|couldn't|shouldn't|isn't|aren't|wasn't|weren't)(?: not)?$|^(?:(?:yes|yeah|no|nope|well|oh) )*(?:i'm|it's|that's|he's|she's|we're|they're|you're|there's|i've|we've|they've|i'll|we'll|they'll|i'd|we'd|they'd) not$/;

/**
 * Words that only open a sentence: "Besides,", "My neighbor.", "Now, if you don't mind,". turnShape reads them so only
 * after a statement of the agent's: after a question they may be the answer ("My neighbor." to "Who saw it?"), and
 * before the agent said anything they may be how the callee answered the phone ("The Smiths.").
 */
function opensOnly(trimmed: string, words: string[]): boolean {
  if (words.length === 1) return LEADS_IN.has(words[0]!);
  if (words.length === 2)
    return DETERMINERS.has(words[0]!) && !isCount(words[1]!) && !WHOLE_AFTER_DETERMINER.has(words[1]!);
  // A subordinate clause with its subject and verb, after nothing but words leading into it ("Now,", "Okay,"): no
  // main clause before it or after it.
  const leadsIn = (w: string) => LEADS_IN.has(w) || SHORT_ANSWERS.has(w);
  const clauses = trimmed
    .split(',')
    .map(normalWords)
    .filter((c) => c.length > 0);
  const first = clauses.findIndex((c) => !c.every(leadsIn));
  const clause = clauses[first] ?? [];
  const start = clause.findIndex((w) => !leadsIn(w));
  return first === clauses.length - 1 && clause.length - start >= 3 && SUBORDINATORS.has(clause[start]!);
}

/** The agent's question ("We take any card. What is your zip code?"): its last one, else its last sentence. */
function lastQuestion(text: string): string {
  const sentences = text.split(/(?<=[.?!])\s+/);
  return normalWords(sentences.findLast((s) => s.includes('?')) ?? sentences.at(-1) ?? '').join(' ');
}

/** "six-six-one-two", "five-go-go": digits the recogniser hyphenated, the first said as one. */
const digitsHyphenated = (parts: string[]): boolean =>
  NUMBER_WORDS.has(parts[0]!) && parts.every((p) => NUMBER_WORDS.has(p) || DIGIT_SOUNDALIKES.has(p));

/** Lower-case words without their punctuation; digits written as hyphenated words ("six-six-one-two") one each. */
const normalWords = (text: string): string[] =>
  text
    .toLowerCase()
    .replace(/[’]/g, "'")
    .split(/\s+/)
    .map((w) => w.replace(/^[^\p{L}\p{N}']+|[^\p{L}\p{N}']+$/gu, ''))
    .flatMap((w) => (w.includes('-') && digitsHyphenated(w.split('-')) ? w.split('-') : [w]))
    .filter(Boolean);

/** Whether the words end in a digit, said or written ("…four four", "…4279."): a number being read, maybe. */
export const endsInDigit = (text: string): boolean => {
  const last = normalWords(text).at(-1);
  return last !== undefined && isNumeric(last);
};

/**
 * Whether the words so far read as a finished turn. Transparent on purpose: each rule is one line
 * a person can check against a transcript.
 */
export function turnShape(text: string, context: TurnContext = {}): TurnShape {
  const trimmed = text.trim();
  const words = normalWords(trimmed);
  if (words.length === 0) return 'unsure';
  const lastToken = words.at(-1)!;
  // A recogniser sometimes hyphenates a conjunction or filler onto the word before ("a cleaning-and.");
  // "check-in" and "follow-up" stay words of their own.
  const pieces = lastToken.includes('-') && !DIGIT_GROUPS.test(lastToken) ? lastToken.split('-') : null;
  const gluedOn = pieces !== null && GLUED_CARRY_ON.has(pieces.at(-1)!);
  const last = gluedOn ? pieces.at(-1)! : lastToken;
  const ending = /[.?!,;:…-]+$/.exec(trimmed)?.[0] ?? '';
  const said = words.join(' ');
  const digits = trailingDigits(words);
  const named = NUMBER_CONTEXT.test(said);
  // "…six five go", "My extension is too one for": a sound-alike after the digits of a number being read out is its
  // last digit, not a word leading on ("I work from nine to" still leads on).
  const endsInNumber =
    isNumeric(last) ||
    (!gluedOn &&
      DIGIT_SOUNDALIKES.has(last) &&
      digits >= 2 &&
      (named || words.slice(-4, -1).filter(isNumeric).length >= 2));
  if (CARRY_ON.has(last) && !endsInNumber) return 'unfinished';
  const before = gluedOn ? pieces.at(-2) : words.at(-2);
  if (SOUNDS_LIKE_AND.has(last) && !OWNERS.has(before ?? '')) return 'unfinished';
  if (ending.includes('…') || ending.endsWith('-')) return 'unfinished';
  // Digits being read out: more may follow after a breath, unless the number is whole: the length of the kind the
  // caller names, or else of the kind the agent asked for ("the last four digits", "your phone number"), or a phone
  // number's where neither gives one. A whole number is the answer given, whatever the recogniser's punctuation. A
  // question that only mentions a number ("tell me the number of guests") leaves a short answer ("Four.") alone.
  if (endsInNumber) {
    const promptKinds = context.promptKinds ?? [];
    const saidWhole = wholeDigits(said, promptKinds);
    const askedWhole = context.asked ? wholeDigits(lastQuestion(context.asked), promptKinds) : undefined;
    const readingNumber =
      named || saidWhole || askedWhole || digits >= LONG_NUMBER_DIGITS || words.slice(-4).filter(isNumeric).length >= 2;
    if (readingNumber) {
      const whole = saidWhole ?? askedWhole;
      if (whole) return whole.includes(digits) ? 'finished' : 'unfinished';
      if (PHONE_DIGITS.includes(digits)) return 'finished';
      // A number of no known length may be whole: wait as long as this caller's own pauses between groups, not
      // max_ms. Under an identifier's length after its name, it has only begun. Unnamed, between a local number's
      // length and a full one's, it is a phone number half read. Read in one long run since the last pause, it is
      // whole.
      if (named ? digits < IDENTIFIER_DIGITS : digits > LONG_NUMBER_DIGITS && digits < PHONE_DIGITS[0]!)
        return 'unfinished';
      return (digitsSincePause(digits, context.earlierWords) ?? 0) >= WHOLE_RUN_DIGITS ? 'finished' : 'number';
    }
  }
  // The recogniser's last mark is what it heard last: a comma after "Great" or "Wow!" is the voice going on. In three
  // runs of bench:turns it never wrote one after a whole short answer ("Yes.", "Sure.", "No thank you.").
  const goesOn = ending.endsWith(',');
  if (words.length <= 2 && words.every((w) => SHORT_ANSWERS.has(w))) return goesOn ? 'pausing' : 'finished';
  if (WANTS_MORE.some((rule) => rule.test(said))) return 'unfinished';
  const afterStatement = context.asked != null && !context.asked.includes('?');
  if (afterStatement && !ending.includes('?') && opensOnly(trimmed, words)) return 'unfinished';
  // An ending the rules do not name, which a sentence seldom has ("The room was very", "Tell me how"). A question the
  // recogniser heard as one, a single word and an elliptical answer are left to the rules below.
  if (
    context.sentenceEnds &&
    words.length >= 2 &&
    !ending.includes('?') &&
    !ELLIPTICAL_ANSWER.test(said) &&
    !(isCount(last) && VALUE_BEFORE.has(before ?? '')) &&
    context.sentenceEnds.probability(words) < SENTENCE_END_UNLIKELY
  )
    return 'unfinished';
  if (!goesOn && /[?.!]/.test(ending)) return 'finished';
  // An open list ("eggs, milk,") goes on; a single trailing comma may.
  if (goesOn || ending.startsWith(','))
    return trimmed.slice(0, -ending.length).includes(',') ? 'unfinished' : 'pausing';
  return 'unsure';
}

export interface SemanticEndOfTurnOptions {
  /** Silence after a finished sentence or question. */
  minMs: number;
  /** Silence after an unfinished phrase. */
  maxMs: number;
  /** Silence when the words do not tell, or before the recogniser has read them (the silence rule's endpointing_ms). */
  unsureMs: number;
  /** The lengths the agent's prompt gives its numbers (promptNumberKinds). */
  promptKinds?: readonly NumberKind[] | undefined;
  /** A language model of the caller's language (TurnContext.sentenceEnds); none reads the words by the rules alone. */
  sentenceEnds?: SentenceEnds | null | undefined;
}

/**
 * How sure a recogniser must be of its own end of turn for the policy to count it. A verdict
 * without a figure (a silence-based endpoint) counts: the recogniser heard the pause too.
 */
const RECOGNISER_END_CONFIDENCE = 0.5;

/**
 * A callee who picks up says a few words ("Hello?", "Yes, hello,") and waits for the caller: where those words do not
 * say more is coming, they are the whole turn, however the recogniser heard them ("To the loaf," for one voice's
 * "Hello?" in bench:amd waited a trailing comma's wait, then 1,250 ms).
 */
const PICKUP_WORDS = 3;
/** A few words, and some: a pause with no words heard is no greeting. */
const isPickUp = (text: string): boolean => {
  const n = normalWords(text).length;
  return n >= 1 && n <= PICKUP_WORDS;
};

/**
 * After a trailing comma: three quarters of the way from the unsure wait to the unfinished one (1,625 ms by default),
 * as long as a caller thinking mid-sentence pauses (0.8-1.4 s, and the VAD hears the pause begin before the voice
 * has quite faded). Halfway (1,250 ms) cut into 14 of 70 held-out turns, this 11 (bench/README.md).
 */
const pausingMs = (o: SemanticEndOfTurnOptions): number => Math.round(o.unsureMs + (o.maxMs - o.unsureMs) * 0.75);

export class SemanticEndOfTurn implements EndOfTurnPolicy {
  constructor(private readonly o: SemanticEndOfTurnOptions) {}

  waitMs(pause: CallerPause): number {
    // The words are on their way: wait for them (they decide again when they come), at most max_ms.
    if (pause.words === null && pause.wordsPending) return this.o.maxMs - pause.silentMs;
    const shape =
      pause.words === null
        ? 'unsure'
        : turnShape(pause.words, {
            asked: pause.asked,
            promptKinds: this.o.promptKinds,
            sentenceEnds: this.o.sentenceEnds,
            earlierWords: pause.earlierWords,
          });
    // The recogniser's own verdict is one more voice, weighed with the words: where they do not
    // tell (unsure, a trailing comma) it settles the turn as finished. Where they say more is coming
    // (a trailing "and" or "is", digits half read) they win: a provider's endpoint is mostly a
    // pause it heard, and a caller mid-sentence pauses too. It never ends a turn the VAD has not
    // heard pause.
    const ended = pause.recogniserEnded;
    const recogniserSure =
      ended != null && (ended.confidence === null || ended.confidence >= RECOGNISER_END_CONFIDENCE);
    // A caller who pauses mid-turn is given their own pause and a margin where the words do not tell, never beyond
    // max_ms; after a number of no known length, their pause between groups of digits. Not after a finished sentence:
    // given there too, a caller's one long pause held every answer after it (bench:turns --set held-out: the gap after
    // finished turns, p50 356 → 1,385 ms; bench/README.md).
    const paced = (ms: number, paceMs: number | null | undefined) => Math.min(this.o.maxMs, Math.max(ms, paceMs ?? 0));
    const pickUp = pause.pickedUp === true && pause.words !== null && isPickUp(pause.words);
    const target =
      shape === 'finished' || (pickUp && shape !== 'unfinished')
        ? this.o.minMs
        : shape === 'unfinished'
          ? this.o.maxMs
          : recogniserSure
            ? this.o.minMs
            : shape === 'pausing'
              ? paced(pausingMs(this.o), pause.paceMs)
              : shape === 'number'
                ? paced(this.o.unsureMs, pause.numberPaceMs)
                : paced(this.o.unsureMs, pause.paceMs);
    return target - pause.silentMs;
  }

  inDoubt(pause: CallerPause): boolean {
    return this.waitMs(pause) + pause.silentMs < this.o.maxMs;
  }
}

/**
 * Whether the recogniser's own verdict is what ends the turn sooner at this pause: the policy's
 * wait with it is shorter than without it (a wait under 1 ms is "now"). For the end-of-turn
 * log, so a run can count how often a provider's signal decided (bench/turns.ts).
 */
export function recogniserDecides(policy: EndOfTurnPolicy, pause: CallerPause): boolean {
  if (pause.recogniserEnded == null) return false;
  const now = (ms: number) => (ms < 1 ? 0 : ms);
  return now(policy.waitMs(pause)) < now(policy.waitMs({ ...pause, recogniserEnded: null }));
}

/** The agent's end-of-turn rule: its `endpointing` setting, else the default mode. */
/**
 * With the model's own turn detection (llm.turn_detection "model") the model's answer ends the caller's turn
 * (CallerInput.endTurnNow); this silence ends it only where the model let a turn go by (its VAD heard no speech).
 */
export const MODEL_TURN_FALLBACK_MS = 3000;

export function endOfTurnPolicy(
  agent: Pick<AgentConfig, 'endpointing' | 'endpointing_ms'> & {
    llm?: Pick<AgentConfig['llm'], 'turn_detection'>;
    system_prompt?: string | undefined;
    stt?: Pick<AgentConfig['stt'], 'language'> | undefined;
  },
  sentenceEnds: (language: string) => SentenceEnds | null = englishSentenceModel,
): EndOfTurnPolicy {
  if (agent.llm?.turn_detection === 'model') return new SilenceEndOfTurn(MODEL_TURN_FALLBACK_MS);
  const e = agent.endpointing ?? {
    mode: AGENT_DEFAULTS.endpointingMode,
    min_ms: AGENT_DEFAULTS.endpointingMinMs,
    max_ms: AGENT_DEFAULTS.endpointingMaxMs,
  };
  if (e.mode === 'silence') return new SilenceEndOfTurn(agent.endpointing_ms);
  return new SemanticEndOfTurn({
    minMs: e.min_ms,
    maxMs: e.max_ms,
    unsureMs: Math.max(e.min_ms, Math.min(agent.endpointing_ms, e.max_ms)),
    promptKinds: promptNumberKinds(agent.system_prompt ?? ''),
    sentenceEnds: sentenceEnds(agent.stt?.language ?? AGENT_DEFAULTS.language),
  });
}

/** The model for the caller's language: English's for English, none for another. */
function englishSentenceModel(language: string): SentenceEnds | null {
  return /^en\b/i.test(language) ? englishSentenceEnds() : null;
}
