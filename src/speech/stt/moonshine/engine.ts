// STT with Moonshine, a small neural recogniser that runs offline (stt.engine "moonshine"; stt.model
// tiny, the default, or base). The model reads a whole stretch of audio at once, in a worker thread
// of this process or of the machine's shared recogniser (reader.ts). A stream buffers what the
// caller says and starts reading at each pause (src/speech/stt/pause-cutter.ts), so the text is
// mostly ready when the turn ends, and each reading comes out as a partial result. Far more
// accurate than pocketsphinx on real callers; it gives no word timings. Phrase hints bias its
// decoding (phrase-bias.ts).
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { isSupportedSampleRate, rms, samplesPerFrame } from '../../../audio/pcm.ts';
import type { SttEngine, SttResult, SttStream, SttStreamOptions } from '../../types.ts';
import { SttError } from '../errors.ts';
import { PAUSE_CUTTER_DEFAULTS, PauseCutter } from '../pause-cutter.ts';
import { UtteranceBuffer } from '../utterance-buffer.ts';
import { PROJECT_ROOT } from '../pocketsphinx/models.ts';
import { PAUSE_DEFAULTS, shortenPauses } from './pauses.ts';
import { MoonshineThreadPool } from './pool.ts';
import type { UtteranceReader } from './reader.ts';
import type { MoonshineSize } from './recogniser.ts';

/** Where set-up unpacks each model from its npm package (scripts/setup.d/35-speech-moonshine.mjs). */
export function moonshineModelDir(size: MoonshineSize): string {
  return join(PROJECT_ROOT, 'build', 'models', `moonshine-${size}`);
}

export const MOONSHINE_DEFAULTS = {
  model: 'tiny' as MoonshineSize,
  /** Worker threads; each holds its own copy of the model (~80 MB tiny) and transcribes one utterance at a time. */
  workers: Math.min(2, availableParallelism()),
  /** Longest utterance kept (seconds); older audio is dropped first. */
  maxUtteranceSeconds: 120,
  /** The model was trained on short segments: longer utterances are cut into windows this long at most… */
  windowSeconds: 20,
  /** …each ending at the quietest frame of its last few seconds, so words are rarely split. */
  windowCutSearchSeconds: 6,
  /** At a pause after this much speech (ms) the audio before it is cut off and read as a piece of its own. */
  minPieceSpeechMs: 3000,
  /**
   * Quiet (ms) after which the audio so far is read as if the pause will last, ahead of the
   * stream's own pause and the call's VAD (~230 ms): the reading is then ready about when the
   * pause is sure. A gap between words this long costs a reading that is dropped…
   */
  glanceAfterMs: 150,
  /** …so the quiet must be deeper than for a pause (30 dB under the loudest, not 20): a soft consonant is not. */
  glanceQuietRatio: 31.6,
  /** Speech (ms) after a pause that makes the audio since then worth reading. */
  minRestSpeechMs: 100,
} as const;

export interface MoonshineEngineOptions {
  /** Which model (stt.model); the default is MOONSHINE_DEFAULTS.model. */
  model?: MoonshineSize;
  /** Reads utterances elsewhere (the machine's shared recogniser); the options below are then its own. */
  reader?: UtteranceReader;
  /** Where its files are; moonshineModelDir(model) by default. */
  modelDir?: string;
  workers?: number;
  /** Bonus per token of a phrase hint (nats; PHRASE_BIAS_DEFAULTS.tokenBonus): bench:speech sweeps it. */
  phraseTokenBonus?: number;
  /** The longest quiet kept inside a reading (pauses.ts; PAUSE_DEFAULTS.keepMs); null keeps every pause as said. */
  innerPauseMs?: number | null;
}

/**
 * Where to cut a long utterance: windows of at most `windowSeconds`, each ending in its quietest frame near the end.
 */
export function windowBounds(
  samples: Int16Array,
  sampleRate: number,
  options: { windowSeconds: number; searchSeconds: number } = {
    windowSeconds: MOONSHINE_DEFAULTS.windowSeconds,
    searchSeconds: MOONSHINE_DEFAULTS.windowCutSearchSeconds,
  },
): number[] {
  const window = Math.round(options.windowSeconds * sampleRate);
  const frame = samplesPerFrame(sampleRate);
  const cuts: number[] = [];
  let start = 0;
  while (samples.length - start > window) {
    const searchFrom = start + window - Math.round(options.searchSeconds * sampleRate);
    let best = start + window;
    let bestLevel = Infinity;
    for (let at = searchFrom; at + frame <= start + window; at += frame) {
      const level = rms(samples.subarray(at, at + frame));
      if (level < bestLevel) {
        bestLevel = level;
        best = at + (frame >> 1);
      }
    }
    cuts.push(best);
    start = best;
  }
  return cuts;
}

/** Audio handed to the engine, and its text once read. */
interface Reading {
  text: Promise<string>;
  done: string | null;
  /** Stops this reading alone (a guess that speech went on after). */
  controller: AbortController;
  /** readNow() asked for it: speech after it does not drop it, it is given as the words so far. */
  asked: boolean;
}

class MoonshineStream implements SttStream {
  private readonly utterance: UtteranceBuffer;
  private readonly cutter: PauseCutter;
  /** The same audio with a shorter pause: where a guess may start. */
  private readonly glance: PauseCutter;
  /** Pieces cut off the utterance under way at pauses, read while the caller goes on speaking. */
  private pieces: Reading[] = [];
  /** A reading of the audio since the last piece, started at a pause: the answer if the caller said nothing more. */
  private guess: Reading | null = null;
  /**
   * A guess readNow() asked for that the caller spoke on after: no longer the answer, but still given, once read, as
   * the words so far. Dropped like any guess, it would never come while the caller talks on, and the call, which asked
   * for it to tell an acknowledgement over the agent from a cut-in, would wait in vain (caller/caller-input.ts).
   * A later readNow() drops it: the reading asked for then covers more.
   */
  private asked: Reading | null = null;
  /** The stream's speech (ms) when the guess was read: speech after it makes the guess stale. */
  private guessAtSpeechMs = 0;
  /** Aborts every reading of the utterance under way. */
  private controller = new AbortController();
  private readonly finalizing = new Set<AbortController>();
  private partialText = '';
  /** readNow() asked for the reading: it is given when done even if its text is the last one's. */
  private partialWanted = false;
  private closed = false;

  constructor(
    private readonly engine: MoonshineEngine,
    private readonly options: SttStreamOptions,
  ) {
    this.utterance = new UtteranceBuffer(MOONSHINE_DEFAULTS.maxUtteranceSeconds * options.sampleRate);
    this.cutter = new PauseCutter({ sampleRate: options.sampleRate });
    this.glance = new PauseCutter({
      sampleRate: options.sampleRate,
      pauseMs: MOONSHINE_DEFAULTS.glanceAfterMs,
      quietRatio: MOONSHINE_DEFAULTS.glanceQuietRatio,
    });
  }

  push(samples: Int16Array): void {
    if (this.closed) throw new SttError('STT_STREAM_CLOSED', 'push after close');
    this.utterance.push(samples);
    const level = rms(samples);
    const pause = this.cutter.push(samples.length, level);
    const glanced = this.glance.push(samples.length, level);
    if (this.guess && this.speechSinceGuess() >= MOONSHINE_DEFAULTS.minRestSpeechMs) this.dropGuess();
    if (pause) this.readAtPause(true);
    else if (glanced) this.readAtPause(false);
  }

  readNow(): void {
    if (this.closed) return;
    // A reading asked for at an earlier pause, which the caller spoke on after, is dropped: the one asked for now
    // covers more, and the earlier one, done after this pause began, would be taken for all the caller said up to it
    // (the end of turn would decide on "five five five" of a number the caller went on with), and hold a thread.
    this.asked?.controller.abort();
    this.asked = null;
    this.readAtPause(false);
    if (this.guess) this.guess.asked = true;
    // Asked for: given once read (at once if the stream glanced at this pause already), even if
    // an earlier reading said the same.
    this.partialWanted = true;
    this.emitPartial();
  }

  /**
   * At a pause, by this stream's own ear (`own`) or the call's VAD: a long stretch of speech is cut
   * off for good, at the stream's own pauses only; a short one is only guessed at, because a piece
   * that starts mid-sentence loses the words before it (cutting at every pause after 0.6 s of
   * speech took 200 recorded prompts from 8.8 to 11.3% WER; after 3 s, to 9.0%). A guess already
   * made at this pause stands: nothing was said since.
   */
  private readAtPause(own: boolean): void {
    if (own && this.cutter.speechSinceCut >= MOONSHINE_DEFAULTS.minPieceSpeechMs) {
      const said = this.utterance.take();
      const piece = this.guess ?? this.read(said);
      this.guess = null;
      this.cutter.cut();
      this.pieces.push(piece);
      return;
    }
    if (this.guess || this.cutter.speechSinceCut === 0) return;
    this.guess = this.read(own ? this.utterance.peek() : this.withPauseAhead(this.utterance.peek()));
    this.guessAtSpeechMs = this.cutter.speechMs;
  }

  /**
   * The audio so far with silence after it up to the stream's own pause length, read before the
   * stream would have heard that pause: the model punctuates partly from the quiet after a phrase
   * (with 200 ms of it instead of 300 it weighed a comma more often after flite's finished
   * sentences, which the end of turn takes for a pause mid-thought). The reading stands only if
   * the caller stays quiet, which is what the padding says.
   */
  private withPauseAhead(samples: Int16Array): Int16Array {
    const missingMs = PAUSE_CUTTER_DEFAULTS.pauseMs - this.cutter.quietMsNow;
    if (missingMs <= 0) return samples;
    const padded = new Int16Array(samples.length + Math.round((missingMs / 1000) * this.options.sampleRate));
    padded.set(samples);
    return padded;
  }

  private speechSinceGuess(): number {
    return this.cutter.speechMs - this.guessAtSpeechMs;
  }

  async finalize(): Promise<SttResult> {
    if (this.closed) throw new SttError('STT_STREAM_CLOSED', 'finalize after close');
    const rest = this.utterance.take();
    const pieces = this.pieces;
    if (this.guess && this.speechSinceGuess() < MOONSHINE_DEFAULTS.minRestSpeechMs) {
      // Nothing said since the pause: the guess read all of it already.
      pieces.push(this.guess);
      this.guess = null;
    } else if (
      rest.length > 0 &&
      (pieces.length === 0 || this.cutter.speechSinceCut >= MOONSHINE_DEFAULTS.minRestSpeechMs)
    ) {
      // After a cut, a rest without speech is the pause itself: reading it would only invite the
      // model to hear words in line noise.
      pieces.push(this.read(rest));
    }
    const controller = this.controller;
    this.startUtterance();
    if (pieces.length === 0) return { text: '' };
    this.finalizing.add(controller);
    try {
      const texts = await Promise.all(pieces.map((p) => p.text));
      const result = { text: texts.filter(Boolean).join(' ') };
      this.options.events?.final?.(result);
      return result;
    } finally {
      this.finalizing.delete(controller);
    }
  }

  /** Drops the utterance under way and fails a finalize() still reading with STT_ABORTED. */
  cancel(): void {
    this.utterance.clear();
    this.controller.abort();
    for (const c of this.finalizing) c.abort();
    this.startUtterance();
  }

  async close(): Promise<void> {
    this.cancel();
    this.closed = true;
  }

  private startUtterance(): void {
    this.dropGuess();
    this.asked?.controller.abort();
    this.asked = null;
    this.pieces = [];
    this.partialText = '';
    this.partialWanted = false;
    this.cutter.reset();
    this.glance.reset();
    this.controller = new AbortController();
  }

  private dropGuess(): void {
    const guess = this.guess;
    this.guess = null;
    if (!guess) return;
    if (guess.asked && guess.done === null) {
      // Asked for and not read yet: it is still given (emitAsked).
      this.asked?.controller.abort();
      this.asked = guess;
      return;
    }
    guess.controller.abort();
  }

  /** Hands audio to the engine, its inner pauses shortened (pauses.ts), in windows if it is long. */
  private read(audio: Int16Array): Reading {
    const keepMs = this.engine.innerPauseMs;
    const samples = keepMs === null ? audio : shortenPauses(audio, this.options.sampleRate, keepMs);
    const controller = new AbortController();
    const signals = [controller.signal, this.controller.signal, ...(this.options.signal ? [this.options.signal] : [])];
    const signal = AbortSignal.any(signals);
    const cuts = [0, ...windowBounds(samples, this.options.sampleRate), samples.length];
    const reading: Reading = {
      text: Promise.all(
        cuts
          .slice(1)
          .map((end, i) =>
            this.engine.transcribe(
              samples.subarray(cuts[i], end),
              this.options.sampleRate,
              signal,
              this.options.phrases,
            ),
          ),
      ).then((texts) => texts.filter(Boolean).join(' ')),
      done: null,
      controller,
      asked: false,
    };
    reading.text.then(
      (text) => {
        reading.done = text;
        if (reading === this.asked) this.emitAsked(reading);
        else this.emitPartial();
      },
      // Seen by finalize(); an abandoned reading has no one waiting.
      () => undefined,
    );
    return reading;
  }

  /** A reading asked for that the caller spoke on after: the words up to where it was asked, as a partial result. */
  private emitAsked(reading: Reading): void {
    this.asked = null;
    const texts: string[] = [];
    for (const r of [...this.pieces, reading]) {
      if (r.done === null) return;
      texts.push(r.done);
    }
    this.partialWanted = false;
    this.partialText = texts.filter(Boolean).join(' ');
    this.options.events?.partial?.({ text: this.partialText });
  }

  /** The text of the utterance so far, once every reading of it is done, as a partial result. */
  private emitPartial(): void {
    const texts: string[] = [];
    for (const r of [...this.pieces, ...(this.guess ? [this.guess] : [])]) {
      // Not yet read: a partial now would say less than the caller said (the end of turn would
      // decide on "" as if the pause held no words).
      if (r.done === null) return;
      texts.push(r.done);
    }
    const partial = texts.filter(Boolean).join(' ');
    if (partial === this.partialText && !this.partialWanted) return;
    this.partialWanted = false;
    this.partialText = partial;
    this.options.events?.partial?.({ text: partial });
  }
}

export class MoonshineEngine implements SttEngine {
  readonly name = 'moonshine';
  readonly model: MoonshineSize;
  /** MoonshineEngineOptions.innerPauseMs. */
  readonly innerPauseMs: number | null;
  private readonly reader: UtteranceReader;

  constructor(options: MoonshineEngineOptions = {}) {
    this.model = options.reader?.model ?? options.model ?? MOONSHINE_DEFAULTS.model;
    this.innerPauseMs = options.innerPauseMs === undefined ? PAUSE_DEFAULTS.keepMs : options.innerPauseMs;
    this.reader =
      options.reader ??
      new MoonshineThreadPool({
        model: this.model,
        modelDir: options.modelDir ?? moonshineModelDir(this.model),
        threads: Math.max(1, options.workers ?? MOONSHINE_DEFAULTS.workers),
        ...(options.phraseTokenBonus === undefined ? {} : { phraseTokenBonus: options.phraseTokenBonus }),
      });
  }

  /** Resolves once the model is loaded, so a call never starts with a recogniser that cannot load. */
  async open(options: SttStreamOptions): Promise<SttStream> {
    options.signal?.throwIfAborted();
    if (!isSupportedSampleRate(options.sampleRate))
      throw new SttError('STT_UNSUPPORTED_RATE', `moonshine cannot take ${options.sampleRate} Hz audio`);
    if (!options.language.toLowerCase().startsWith('en'))
      throw new SttError('STT_CONFIG_INVALID', `moonshine has an English model only, not ${options.language}`);
    await this.reader.ready();
    return new MoonshineStream(this, options);
  }

  /** Text of one utterance, biased toward `phrases`; rejects with STT_ABORTED as soon as `signal` fires. */
  transcribe(
    samples: Int16Array,
    sampleRate: number,
    signal?: AbortSignal,
    phrases: readonly string[] = [],
  ): Promise<string> {
    return this.reader.read(samples, sampleRate, phrases, signal);
  }

  /** Stops the recogniser's threads and fails what is pending; a later open() starts them again. */
  close(): Promise<void> {
    return this.reader.close();
  }
}
