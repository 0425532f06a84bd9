// One call's stream to a streaming recogniser (deepgram/, assemblyai/): what both share. The audio
// goes out as it is pushed; the provider's results come back as it reads, and are kept as the
// utterance under way: the words it has settled, then its latest guess at the rest. finalize()
// asks the provider to settle what it heard and resolves when it says it has (or after a short
// grace, with the reading so far: a provider owes no answer when nothing was left to settle).
// A provider that fails or closes unasked fails the stream with a coded error; the call opens another.
import type { Timers, TimerHandle } from '../../timers.ts';
import type { WebSocket } from '../../net/websocket.ts';
import type { SttResult, SttStream, SttStreamOptions, WordTiming } from '../types.ts';
import { SttError } from './errors.ts';
import { frameText, providerClosed, type StreamingProvider } from './provider-socket.ts';

export const STREAMING_STT_DEFAULTS = {
  /**
   * After finalize(), how long the provider may go quiet before the reading so far is taken as final (a provider owes
   * no settled answer when nothing was left to settle). Each message from it while it settles starts the wait again.
   */
  finalGraceMs: 2_000,
  /** The longest finalize() waits for a provider that keeps sending but never settles. */
  finalMaxMs: 10_000,
  /**
   * The longest a stream may hear the caller speak without sending any result (SttStream.firstResultWithinMs).
   * Deepgram's interim results come about once a second of audio (its documented example: 0–1.1 s, 0–2.1 s, 0–3.1 s…)
   * and AssemblyAI's turns come as the words are read, a few hundred ms apart. Three seconds of speech with nothing
   * back is three of Deepgram's beats missed: a stream that is connected but not reading.
   */
  firstResultMs: 3_000,
} as const;

export interface StreamingStreamSettings {
  provider: StreamingProvider;
  socket: WebSocket;
  options: SttStreamOptions;
  timers: Timers;
  finalGraceMs: number;
}

interface PendingFinal {
  resolve(result: SttResult): void;
  reject(err: Error): void;
  timer: TimerHandle;
  /** timers.now() when finalize() asked. */
  since: number;
}

const joinText = (parts: readonly string[]): string =>
  parts
    .map((p) => p.trim())
    .filter(Boolean)
    .join(' ');

export abstract class StreamingSttStream implements SttStream {
  readonly firstResultWithinMs: number = STREAMING_STT_DEFAULTS.firstResultMs;
  protected readonly socket: WebSocket;
  protected readonly options: SttStreamOptions;
  private readonly provider: StreamingProvider;
  protected readonly timers: Timers;
  private readonly finalGraceMs: number;
  /** Settled parts of the utterance under way, in order. */
  private settled: SttResult[] = [];
  /** The provider's latest guess at what follows the settled parts. */
  private guess: SttResult | null = null;
  /** Audio pushed since the last finalize or cancel: without it there is nothing to settle. */
  private pushedSinceFinal = false;
  private pending: PendingFinal | null = null;
  /** After cancel(): results of the dropped utterance still on their way are thrown away until it is settled. */
  private dropping: TimerHandle | null = null;
  private failure: SttError | null = null;
  private closed = false;
  private readonly onAbort = () => {
    this.cancel();
    void this.close();
  };

  constructor(settings: StreamingStreamSettings) {
    this.socket = settings.socket;
    this.options = settings.options;
    this.provider = settings.provider;
    this.timers = settings.timers;
    this.finalGraceMs = settings.finalGraceMs;
    this.socket.on('message', (data, isBinary) => {
      if (this.closed || this.failure || isBinary) return;
      this.stillSettling();
      this.message(frameText(data));
    });
    this.socket.on('close', (code, reason) => {
      if (!this.closed) this.fail(providerClosed(this.provider, code, reason.toString('utf8')));
    });
    this.socket.on('error', (err) => {
      if (!this.closed)
        this.fail(new SttError('STT_PROVIDER_ERROR', `${this.provider} stream failed: ${err.message}`, { cause: err }));
    });
    settings.options.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** One text message from the provider. */
  protected abstract message(text: string): void;
  /** Sends the pushed audio (the line's encoding, the provider's framing). */
  protected abstract sendAudio(samples: Int16Array): void;
  /** Says goodbye before the socket closes (CloseStream, Terminate). */
  protected abstract goodbye(): void;

  push(samples: Int16Array): void {
    if (this.closed) throw new SttError('STT_STREAM_CLOSED', 'push after close');
    if (this.failure || samples.length === 0) return;
    this.pushedSinceFinal = true;
    this.sendAudio(samples);
  }

  /** The reading so far, given again as a partial: the provider reads as the audio comes, so it is already current. */
  readNow(): void {
    if (this.closed || this.failure) return;
    this.options.events?.partial?.(this.reading());
  }

  finalize(): Promise<SttResult> {
    if (this.closed) return Promise.reject(new SttError('STT_STREAM_CLOSED', 'finalize after close'));
    if (this.failure) return Promise.reject(this.failure);
    if (this.pending) return Promise.reject(new SttError('STT_ABORTED', 'a finalize is already under way'));
    if ((!this.pushedSinceFinal && !this.hasWords()) || this.settledAlready()) {
      this.pushedSinceFinal = false;
      const result = this.takeUtterance();
      this.options.events?.final?.(result);
      return Promise.resolve(result);
    }
    this.pushedSinceFinal = false;
    return new Promise<SttResult>((resolve, reject) => {
      const timer = this.timers.setTimeout(() => this.quietFor(), this.finalGraceMs);
      this.pending = { resolve, reject, timer, since: this.timers.now() };
      this.flushAudio();
      this.send(this.settleMessage());
    });
  }

  cancel(): void {
    if (this.closed || this.failure) return;
    this.takeUtterance();
    if (this.pending) {
      const { reject, timer } = this.pending;
      this.timers.clearTimeout(timer);
      this.pending = null;
      reject(new SttError('STT_ABORTED', 'utterance dropped'));
    }
    if (!this.pushedSinceFinal) return;
    this.pushedSinceFinal = false;
    this.timers.clearTimeout(this.dropping ?? undefined);
    this.dropping = this.timers.setTimeout(() => (this.dropping = null), this.finalGraceMs);
    this.flushAudio();
    this.send(this.settleMessage());
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.options.signal?.removeEventListener('abort', this.onAbort);
    if (!this.failure && this.socket.readyState === this.socket.OPEN) {
      try {
        this.goodbye();
      } catch {
        // The socket is going anyway.
      }
    }
    this.closed = true;
    this.timers.clearTimeout(this.dropping ?? undefined);
    this.rejectPending(new SttError('STT_STREAM_CLOSED', 'stream closed'));
    this.socket.close(1000);
  }

  // ---- for the provider's message handling ----

  /** Words the provider has settled (Deepgram's is_final, AssemblyAI's end of turn). */
  protected heardSettled(result: SttResult): void {
    if (this.dropping) return;
    this.guess = null;
    if (result.text.trim()) this.settled.push(result);
    this.options.events?.partial?.(this.reading());
  }

  /** The provider's current guess at the words after the settled ones. */
  protected heardGuess(result: SttResult): void {
    if (this.dropping) return;
    this.guess = result.text.trim() ? result : null;
    this.options.events?.partial?.(this.reading());
  }

  /** The provider judged the caller's turn over. */
  protected heardTurnEnd(confidence: number | null): void {
    if (this.dropping || !this.hasWords()) return;
    this.options.events?.endOfTurn?.({ confidence });
  }

  /** The provider has settled everything asked for: finalize() resolves (or the dropped utterance is gone). */
  protected heardSettledAll(): void {
    if (this.dropping) {
      this.timers.clearTimeout(this.dropping);
      this.dropping = null;
      return;
    }
    this.settle();
  }

  /** A provider's error message: the stream is failed with our own words and the provider's short code. */
  protected heardError(code: string | number | undefined): void {
    const said = code === undefined ? '' : ` (${String(code).slice(0, 32)})`;
    this.fail(new SttError('STT_PROVIDER_ERROR', `${this.provider} reported an error${said}`));
  }

  /** A message that does not match the provider's documented shape. */
  protected heardMalformed(what: string): void {
    this.fail(new SttError('STT_BAD_RESPONSE', `${this.provider} sent a ${what} that does not match its schema`));
  }

  protected send(data: string | Buffer): void {
    if (this.socket.readyState === this.socket.OPEN) this.socket.send(data);
  }

  /**
   * Everything heard is settled and nothing is under way (AssemblyAI ended the turn itself): finalize() answers at
   * once instead of asking for a settling the provider owes no answer to.
   */
  protected settledAlready(): boolean {
    return false;
  }

  /** Audio held back for the provider's framing goes out before a settle request. */
  protected flushAudio(): void {}

  /**
   * The utterance under way was taken (its final given, or dropped): what the provider still sends about its words
   * belongs to no utterance (AssemblyAI's late formatted copy of a turn).
   */
  protected utteranceTaken(): void {}

  /**
   * The text message that asks the provider to settle what it has heard now (Deepgram's Finalize, AssemblyAI's
   * ForceEndpoint).
   */
  protected abstract settleMessage(): string;

  /** Settled words and the guess after them. */
  private reading(): SttResult {
    const parts = this.guess ? [...this.settled, this.guess] : this.settled;
    const words: WordTiming[] = parts.flatMap((p) => p.words ?? []);
    const text = joinText(parts.map((p) => p.text));
    return words.length > 0 ? { text, words } : { text };
  }

  private hasWords(): boolean {
    return this.settled.length > 0 || this.guess !== null;
  }

  private takeUtterance(): SttResult {
    const result = this.reading();
    this.settled = [];
    this.guess = null;
    this.utteranceTaken();
    return result;
  }

  /** The provider is still at work on what finalize() asked for: its quiet wait starts again, within finalMaxMs. */
  private stillSettling(): void {
    const pending = this.pending;
    if (!pending) return;
    this.timers.clearTimeout(pending.timer);
    pending.timer = this.timers.setTimeout(() => this.quietFor(), Math.min(this.finalGraceMs, this.maxLeft(pending)));
  }

  /**
   * The provider went quiet for finalGraceMs after finalize(): with words already read, nothing was left to settle and
   * they are the turn. With none yet, audio it has not read is still owed an answer: waited for, up to finalMaxMs.
   */
  private quietFor(): void {
    const pending = this.pending;
    if (!pending) return;
    const left = this.maxLeft(pending);
    if (this.hasWords() || left <= 0) return this.settle();
    pending.timer = this.timers.setTimeout(() => this.quietFor(), Math.min(this.finalGraceMs, left));
  }

  private maxLeft(pending: PendingFinal): number {
    return Math.max(0, STREAMING_STT_DEFAULTS.finalMaxMs - (this.timers.now() - pending.since));
  }

  private settle(): void {
    const pending = this.pending;
    if (!pending) return;
    this.pending = null;
    this.timers.clearTimeout(pending.timer);
    const result = this.takeUtterance();
    this.options.events?.final?.(result);
    pending.resolve(result);
  }

  private rejectPending(err: Error): void {
    const pending = this.pending;
    if (!pending) return;
    this.pending = null;
    this.timers.clearTimeout(pending.timer);
    pending.reject(err);
  }

  private fail(err: SttError): void {
    if (this.failure || this.closed) return;
    this.failure = err;
    this.timers.clearTimeout(this.dropping ?? undefined);
    this.rejectPending(err);
    this.socket.terminate();
    this.options.events?.error?.(err);
  }
}
