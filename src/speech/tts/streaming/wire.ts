// What each streaming voice's protocol adds to the shared session (./session.ts): the address and
// headers of its socket, the messages for an utterance's text, end and cut, and its reading of what
// the provider sends back — audio bytes in the line's coding, word timings, the end of an utterance,
// errors. One wire per call (a wire may keep per-utterance state, such as ElevenLabs' partial words).
import type { MediaRate } from '../../../audio/pcm.ts';
import { SpeechError } from '../../errors.ts';
import type { WordTiming } from '../../types.ts';

/** How the provider sends audio: μ-law for an 8 kHz phone line, PCM16 little-endian otherwise. */
export type WireEncoding = 'mulaw' | 'pcm16';

export function wireEncodingFor(rate: MediaRate): WireEncoding {
  return rate === 8000 ? 'mulaw' : 'pcm16';
}

/** One thing a provider message says; `context` null means the utterance being spoken. */
export type WireEvent =
  | { type: 'audio'; context: string | null; bytes: Uint8Array }
  /** Seconds from the utterance's first sample. */
  | { type: 'words'; context: string | null; words: WordTiming[] }
  | { type: 'done'; context: string | null }
  | { type: 'error'; context: string | null; error: SpeechError };

export interface VoiceWire {
  readonly provider: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly encoding: WireEncoding;
  /** Whether the provider reports when each word is said. */
  readonly timesWords: boolean;
  /** Sent once, when the socket opens. */
  opening(): string[];
  /** More text of utterance `context`; `first` for its first text. */
  text(context: string, text: string, first: boolean): string[];
  /** No more text for `context`: say what is held and tell when all its audio is sent. */
  end(context: string): string[];
  /** Cut `context`: drop what it still had to say. */
  cancel(context: string): string[];
  /** Sent before the session closes the socket. */
  closing(): string[];
  /** One message from the provider; throws a SpeechError for a message its protocol has not. */
  read(data: Buffer, binary: boolean): WireEvent[];
}

/**
 * A provider's code for an error, kept only as a short token (letters, digits, _ . -): a provider's error
 * text never reaches the record or the log as it was sent.
 */
function providerCode(value: unknown): string {
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value : '';
  const token = text.trim().slice(0, 64);
  return /^[A-Za-z0-9_.-]+$/.test(token) ? token : 'unknown';
}

export function providerError(provider: string, code: unknown, status?: unknown): SpeechError {
  const statusPart = typeof status === 'number' && Number.isInteger(status) ? ` (status ${status})` : '';
  return new SpeechError('TTS_PROVIDER_ERROR', `${provider} reported error ${providerCode(code)}${statusPart}`);
}

/** A message that does not parse as its protocol's: the provider (or something in between) is not speaking it. */
export function unreadable(provider: string): SpeechError {
  return new SpeechError('TTS_PROVIDER_DISCONNECTED', `${provider} sent a message its protocol has not`);
}

/**
 * Words out of character timings (ElevenLabs' alignment), carried across messages: a word may start in
 * one message and end in the next. Times are ms from the utterance's first sample.
 */
export class CharacterWords {
  private word = '';
  private start = 0;
  private end = 0;

  /** Characters with their start and duration; returns the words they complete. */
  push(chars: readonly string[], startsMs: readonly number[], durationsMs: readonly number[]): WordTiming[] {
    const words: WordTiming[] = [];
    for (let i = 0; i < chars.length; i++) {
      const char = chars[i]!;
      const start = startsMs[i] ?? this.end;
      const end = start + (durationsMs[i] ?? 0);
      if (/\s/.test(char)) {
        if (this.word) words.push(this.take());
        continue;
      }
      if (!this.word) this.start = start;
      this.word += char;
      this.end = end;
    }
    return words;
  }

  /** The end of the utterance: its last word, if one is open. */
  flush(): WordTiming[] {
    return this.word ? [this.take()] : [];
  }

  private take(): WordTiming {
    const word = { word: this.word, start: this.start / 1000, end: this.end / 1000 };
    this.word = '';
    return word;
  }
}
