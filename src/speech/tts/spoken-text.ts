// Text as a person would say it, for any voice: a model writes "$12.50", "3:30 pm",
// "+1 415 555 0100" and "ann@example.com", and a synthesizer that reads them literally sounds
// broken ("dollar twelve point five zero"). Applied to each piece just before synthesis; the
// transcript keeps what the model wrote. English, rule by rule, each rule a regular expression
// that claims its span before the plainer ones see it; then an agent's own pronunciations,
// whole words, on the result.

export interface Pronunciation {
  /** Matched as a whole word, ignoring case. */
  word: string;
  replacement: string;
}

const ONES = [
  'zero',
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'eleven',
  'twelve',
  'thirteen',
  'fourteen',
  'fifteen',
  'sixteen',
  'seventeen',
  'eighteen',
  'nineteen',
];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
const SCALES: [number, string][] = [
  [1e9, 'billion'],
  [1e6, 'million'],
  [1e3, 'thousand'],
];
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const DIGIT_NAMES = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];

/** "one thousand two hundred thirty-four"; integers from 0 to 999,999,999,999. */
export function cardinal(n: number): string {
  if (!Number.isInteger(n) || n < 0 || n >= 1e12) return digits(String(n));
  if (n < 20) return ONES[n]!;
  if (n < 100) return TENS[Math.floor(n / 10)]! + (n % 10 ? `-${ONES[n % 10]}` : '');
  if (n < 1000) return `${ONES[Math.floor(n / 100)]} hundred${n % 100 ? ` ${cardinal(n % 100)}` : ''}`;
  for (const [size, name] of SCALES) {
    if (n >= size) return `${cardinal(Math.floor(n / size))} ${name}${n % size ? ` ${cardinal(n % size)}` : ''}`;
  }
  return ONES[n]!;
}

const ORDINAL_WORDS: Record<string, string> = {
  one: 'first',
  two: 'second',
  three: 'third',
  five: 'fifth',
  eight: 'eighth',
  nine: 'ninth',
  twelve: 'twelfth',
};

/** "twenty-second". */
export function ordinal(n: number): string {
  const words = cardinal(n);
  const last = /[a-z]+$/.exec(words)![0];
  const head = words.slice(0, words.length - last.length);
  if (ORDINAL_WORDS[last]) return head + ORDINAL_WORDS[last];
  if (last.endsWith('y')) return `${head}${last.slice(0, -1)}ieth`;
  return `${words}th`;
}

/** Each digit by name: "four one five". */
function digits(s: string): string {
  return [...s.replace(/\D/g, '')].map((d) => DIGIT_NAMES[Number(d)]).join(' ');
}

/** A year as people say it: "nineteen ninety-nine", "twenty twenty-six", "two thousand five". */
function year(y: number): string {
  if (y >= 2000 && y < 2010) return cardinal(y);
  const hi = Math.floor(y / 100);
  const lo = y % 100;
  if (lo === 0) return `${cardinal(hi)} hundred`;
  return `${cardinal(hi)} ${lo < 10 ? `oh ${cardinal(lo)}` : cardinal(lo)}`;
}

/** "3:05 pm" → "three oh five p m"; "15:00" → "fifteen hundred"; "9 am" → "nine a m". */
function clock(h: number, m: number, meridiem: string | undefined): string {
  const hour = cardinal(h);
  const minutes =
    m === 0
      ? meridiem
        ? ''
        : h > 12 || h === 0
          ? ' hundred'
          : " o'clock"
      : m < 10
        ? ` oh ${cardinal(m)}`
        : ` ${cardinal(m)}`;
  const suffix = meridiem ? ` ${meridiem.toLowerCase().replace(/\./g, '').split('').join(' ')}` : '';
  return `${hour}${minutes}${suffix}`;
}

const CURRENCIES: Record<string, { one: string; many: string; cent: string; cents: string }> = {
  $: { one: 'dollar', many: 'dollars', cent: 'cent', cents: 'cents' },
  '€': { one: 'euro', many: 'euros', cent: 'cent', cents: 'cents' },
  '£': { one: 'pound', many: 'pounds', cent: 'penny', cents: 'pence' },
};

function money(symbol: string, whole: string, fraction: string | undefined, scale: string | undefined): string {
  const c = CURRENCIES[symbol]!;
  const units = Number(whole.replace(/,/g, ''));
  if (scale) return `${number(whole.replace(/,/g, '') + (fraction ? `.${fraction}` : ''))} ${scale} ${c.many}`;
  const cents = fraction ? Number(fraction.padEnd(2, '0').slice(0, 2)) : 0;
  const unitWords = units === 0 && cents > 0 ? '' : `${cardinal(units)} ${units === 1 ? c.one : c.many}`;
  if (cents === 0) return unitWords;
  const centWords = `${cardinal(cents)} ${cents === 1 ? c.cent : c.cents}`;
  return unitWords ? `${unitWords} and ${centWords}` : centWords;
}

/** A plain number: "1,234" → cardinal; "3.75" → "three point seven five"; long codes digit by digit. */
function number(raw: string): string {
  const [whole, fraction] = raw.replace(/,/g, '').split('.');
  const head = whole!.length > 12 ? digits(whole!) : cardinal(Number(whole));
  return fraction === undefined ? head : `${head} point ${digits(fraction)}`;
}

/**
 * A phone number in groups, each digit said: "+1 415 555 0100" → "plus one, four one five, five five five, zero one
 * zero zero".
 */
function phone(raw: string): string {
  const plus = raw.trim().startsWith('+');
  const groups = raw.split(/[^\d]+/).filter(Boolean);
  let parts = groups;
  if (groups.length === 1) {
    const d = groups[0]!;
    // E.164 without separators: NANP as 1-3-3-4, others in threes with the last four together.
    if (plus && d.length === 11 && d.startsWith('1')) parts = [d.slice(0, 1), d.slice(1, 4), d.slice(4, 7), d.slice(7)];
    else {
      parts = [];
      let rest = d;
      while (rest.length > 4) {
        parts.push(rest.slice(0, 3));
        rest = rest.slice(3);
      }
      parts.push(rest);
    }
  }
  return `${plus ? 'plus ' : ''}${parts.map(digits).join(', ')}`;
}

type Rule = [RegExp, (...groups: string[]) => string];

const RULES: Rule[] = [
  // e-mail addresses: every dot and the at said.
  [
    /\b([\w.+-]+)@([\w-]+(?:\.[\w-]+)+)\b/g,
    (_m, user, domain) =>
      `${user!.replace(/\./g, ' dot ').replace(/[_+-]/g, ' ')} at ${domain!.replace(/\./g, ' dot ')}`,
  ],
  // phone numbers: +E.164, or a parenthesised area code, or 3-3-4 groups.
  [
    /(?<![\w.])(\+\d[\d\s().-]{7,}\d|\(\d{3}\)\s?\d{3}[\s.-]\d{4}|\b\d{3}[.-]\d{3}[.-]\d{4})(?!\w|\.\d)/g,
    (m) => phone(m),
  ],
  // ISO dates.
  [
    /\b(\d{4})-(\d{2})-(\d{2})\b/g,
    (m, y, mo, d) =>
      Number(mo) >= 1 && Number(mo) <= 12 && Number(d) >= 1 && Number(d) <= 31
        ? `${MONTHS[Number(mo) - 1]} ${ordinal(Number(d))}, ${year(Number(y))}`
        : m,
  ],
  // US dates: M/D/YYYY.
  [
    /\b(\d{1,2})\/(\d{1,2})\/(\d{4})\b/g,
    (m, mo, d, y) =>
      Number(mo) >= 1 && Number(mo) <= 12 && Number(d) >= 1 && Number(d) <= 31
        ? `${MONTHS[Number(mo) - 1]} ${ordinal(Number(d))}, ${year(Number(y))}`
        : m,
  ],
  // Month and day: "November 24" → "November twenty-fourth".
  [
    new RegExp(
      `\\b(${MONTHS.join('|')}|${MONTHS.map((m) => m.slice(0, 3)).join('|')})\\.? (\\d{1,2})(?:st|nd|rd|th)?\\b(?!:)`,
      'g',
    ),
    (_m, month, d) => `${MONTHS.find((x) => x.startsWith(month!.slice(0, 3)))} ${ordinal(Number(d))}`,
  ],
  // clock times, with or without am/pm ("p.m." keeps its last dot where it ends the sentence).
  [
    /\b(\d{1,2}):(\d{2})\s?([ap]\.?m(?:\.(?=\s+[a-z]))?)?(?![\w:])/gi,
    (m, h, min, mer) => (Number(h) < 24 && Number(min) < 60 ? clock(Number(h), Number(min), mer) : m),
  ],
  [
    /\b(\d{1,2})\s?([ap]\.?m(?:\.(?=\s+[a-z]))?)(?!\w)/gi,
    (m, h, mer) => (Number(h) >= 1 && Number(h) <= 12 ? clock(Number(h), 0, mer) : m),
  ],
  // money: "$12.50", "$1,200", "€5", "$2.5 million".
  [
    /([$€£])\s?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?:\s?(million|billion|thousand))?\b/g,
    (_m, sym, whole, frac, scale) => money(sym!, whole!, frac, scale),
  ],
  [/\b(\d+(?:\.\d+)?)\s?%/g, (_m, n) => `${number(n!)} percent`],
  // ordinals: "1st", "22nd".
  [/\b(\d+)(st|nd|rd|th)\b/gi, (_m, n) => ordinal(Number(n))],
  // a number inside a code ("DEMO-5098", "A12B"): digit by digit.
  [
    /\b([A-Za-z]+-?)(\d+)\b/g,
    (_m, letters, n) => `${letters!.replace(/-$/, ' ')}${letters!.endsWith('-') ? '' : ' '}${digits(n!)}`,
  ],
  // long digit strings (order and account numbers): digit by digit; a year-like number after "in"/"since".
  [/\b(in|since|by|of|year)\s(1[1-9]\d\d|20\d\d)\b/gi, (_m, word, y) => `${word} ${year(Number(y))}`],
  [/(?<![\d.,])(\d{5,})(?![\d.,]\d)/g, (_m, n) => digits(n!)],
  // other numbers.
  [/(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w])/g, (_m, whole, frac) => number(`${whole}${frac ?? ''}`)],
  [/\s&\s/g, () => ' and '],
];

function escape(word: string): string {
  return word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The text as it should be spoken. */
export function toSpokenText(
  text: string,
  pronunciation: readonly Pronunciation[] = [],
  options: { rules?: boolean } = {},
): string {
  let out = text;
  // The rules first, so an address or a number is still whole when they read it.
  if (options.rules !== false) {
    for (const [pattern, say] of RULES)
      out = out.replace(pattern, (...args: unknown[]) => say(...(args.slice(0, -2) as string[])));
  }
  for (const p of pronunciation) {
    out = out.replace(new RegExp(`(?<![\\w])${escape(p.word)}(?![\\w])`, 'gi'), p.replacement);
  }
  return out;
}

/** An agent voice's setting as a function, or none when it wants its text read as written. */
export function spokenTextFor(voice: {
  normalize_for_speech?: boolean | undefined;
  pronunciation?: readonly Pronunciation[] | undefined;
}): ((text: string) => string) | undefined {
  const pronunciation = voice.pronunciation ?? [];
  if (voice.normalize_for_speech === false) {
    return pronunciation.length === 0 ? undefined : (text) => toSpokenText(text, pronunciation, { rules: false });
  }
  return (text) => toSpokenText(text, pronunciation);
}
