// Turns streamed model tokens into text chunks ready for speech. Cuts only where a punctuation
// mark is followed by whitespace, so a number ("3.5", "$1,200.50"), a URL or an e-mail address
// is never split; a known abbreviation or an initial before a period is not a sentence end.
// The first chunk may end early at a clause boundary so speech starts sooner.
// Hot path (every token): scans each character once and keeps only the unspoken tail.

export interface SpeakableOptions {
  /** Words needed before a clause boundary (, ; : —) may end the first chunk. */
  firstChunkMinWords?: number;
  /** A run this long with no boundary is cut at its last space, so speech never waits forever. */
  maxChunkChars?: number;
}

export const SPEAKABLE_DEFAULTS = { firstChunkMinWords: 4, maxChunkChars: 250 } as const;

// Lower-case words that end with a period without ending a sentence.
const ABBREVIATIONS = new Set([
  'mr',
  'mrs',
  'ms',
  'dr',
  'prof',
  'sr',
  'jr',
  'st',
  'mt',
  'ft',
  'vs',
  'etc',
  'approx',
  'appt',
  'dept',
  'est',
  'inc',
  'ltd',
  'co',
  'corp',
  'jan',
  'feb',
  'mar',
  'apr',
  'jun',
  'jul',
  'aug',
  'sep',
  'sept',
  'oct',
  'nov',
  'dec',
  'mon',
  'tue',
  'tues',
  'wed',
  'thu',
  'thur',
  'thurs',
  'fri',
  'sat',
  'sun',
  'ave',
  'blvd',
  'rd',
  'tel',
  'ext',
  'no',
  'nos',
  'vol',
  'fig',
  'cf',
  'al',
  'min',
  'max',
  'hr',
  'hrs',
  'sec',
]);

const enum Ch {
  Space = 32,
  Tab = 9,
  Lf = 10,
  Cr = 13,
  Period = 46,
  Bang = 33,
  Question = 63,
  Comma = 44,
  Semi = 59,
  Colon = 58,
  Ellipsis = 0x2026,
  EmDash = 0x2014,
  Quote = 34,
  Apos = 39,
  RParen = 41,
  RBracket = 93,
  RDQuote = 0x201d,
  RSQuote = 0x2019,
}

function isSpace(c: number): boolean {
  return c === Ch.Space || c === Ch.Lf || c === Ch.Cr || c === Ch.Tab || c === 0xa0;
}

function isCloser(c: number): boolean {
  return (
    c === Ch.Quote || c === Ch.Apos || c === Ch.RParen || c === Ch.RBracket || c === Ch.RDQuote || c === Ch.RSQuote
  );
}

function isLetter(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

export class SpeakableChunker {
  private buf = '';
  /** Next index of buf to look at. */
  private scan = 0;
  /** End (exclusive) of the best cut found so far, 0 if none. */
  private cut = 0;
  private words = 0;
  private inWord = false;
  private first = true;
  private readonly minWords: number;
  private readonly maxChars: number;

  constructor(options: SpeakableOptions = {}) {
    this.minWords = options.firstChunkMinWords ?? SPEAKABLE_DEFAULTS.firstChunkMinWords;
    this.maxChars = options.maxChunkChars ?? SPEAKABLE_DEFAULTS.maxChunkChars;
  }

  /** Adds a token; returns a chunk (trimmed) when one is ready, else null. */
  push(token: string): string | null {
    this.buf += token;
    const buf = this.buf;
    const n = buf.length;
    let i = this.scan;
    for (; i < n; i++) {
      const c = buf.charCodeAt(i);
      if (isSpace(c)) {
        this.inWord = false;
        if (c === Ch.Lf && i > 0 && buf.charCodeAt(i - 1) === Ch.Lf) this.cut = i + 1; // paragraph break
        continue;
      }
      if (!this.inWord) {
        this.inWord = true;
        this.words++;
      }
      const sentence = c === Ch.Period || c === Ch.Bang || c === Ch.Question || c === Ch.Ellipsis;
      const clause = this.first && (c === Ch.Comma || c === Ch.Semi || c === Ch.Colon || c === Ch.EmDash);
      if (!sentence && !clause) continue;
      // Look past closing quotes/brackets for the whitespace that makes this a boundary.
      let j = i + 1;
      while (j < n && isCloser(buf.charCodeAt(j))) j++;
      if (j >= n) break; // undecided until more text comes
      if (!isSpace(buf.charCodeAt(j))) continue;
      if (sentence) {
        if (c === Ch.Period && this.notSentenceEnd(buf, i)) continue;
        this.cut = j;
      } else if (this.words >= this.minWords) {
        this.cut = j;
      }
      // The first chunk goes out at its first boundary; later ones may gather several sentences.
      if (this.first && this.cut > 0) {
        i = j;
        break;
      }
    }
    this.scan = i;
    if (this.cut > 0) return this.take(this.cut);
    if (buf.length >= this.maxChars) {
      const space = buf.lastIndexOf(' ', this.maxChars);
      if (space > 0) return this.take(space);
    }
    return null;
  }

  /** End of the reply: whatever is left, or null. */
  flush(): string | null {
    const rest = this.buf.trim();
    this.reset();
    return rest === '' ? null : rest;
  }

  /** Drops everything (barge-in). */
  reset(): void {
    this.buf = '';
    this.scan = 0;
    this.cut = 0;
    this.words = 0;
    this.inWord = false;
    this.first = true;
  }

  private take(end: number): string | null {
    const chunk = this.buf.slice(0, end).trim();
    let start = end;
    while (start < this.buf.length && isSpace(this.buf.charCodeAt(start))) start++;
    this.buf = this.buf.slice(start);
    this.scan = Math.max(0, this.scan - start);
    this.cut = 0;
    this.words = 0;
    this.inWord = this.scan > 0; // the kept tail was scanned up to a word character or not at all
    this.first = false;
    return chunk === '' ? null : chunk;
  }

  /** A period after an abbreviation ("Dr.", "etc."), an initial ("J.") or a dotted acronym ("U.S.", "e.g."). */
  private notSentenceEnd(buf: string, dot: number): boolean {
    let s = dot;
    while (s > 0 && !isSpace(buf.charCodeAt(s - 1))) s--;
    const word = buf.slice(s, dot);
    if (word.length === 0) return false;
    if (word.length === 1 && isLetter(word.charCodeAt(0))) return true;
    if (word.indexOf('.') > 0) {
      // Dotted acronym: single letters between periods.
      let acronym = true;
      for (let k = 0; k < word.length; k++) {
        const c = word.charCodeAt(k);
        if (c === Ch.Period ? k % 2 !== 1 : k % 2 !== 0 || !isLetter(c)) {
          acronym = false;
          break;
        }
      }
      if (acronym) return true;
    }
    let start = 0;
    while (start < word.length && !isLetter(word.charCodeAt(start))) start++; // "(Dr" → "Dr"
    return ABBREVIATIONS.has(word.slice(start).toLowerCase());
  }
}
