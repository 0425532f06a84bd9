// The small interfaces the call engine uses to talk to speech engines. An embedded offline
// engine and a self-hosted or cloud engine implement the same shapes, so an agent can pick
// either per call. Audio inside the runtime is PCM16 mono; 16 kHz unless a stream says otherwise.
import type { MediaRate, PcmChunk } from '../audio/pcm.ts';
import type { AgentConfig } from '../agents/schema.ts';

export type { PcmChunk };

export interface WordTiming {
  word: string;
  /** Seconds from the start of the audio pushed into this stream. */
  start: number;
  end: number;
}

export interface SttResult {
  text: string;
  /** Present where the engine gives word timings. */
  words?: WordTiming[];
}

/**
 * The recogniser's own sense that the caller's turn is over (a streaming provider's endpointing or
 * turn model): one more input to the call's end-of-turn policy, which weighs it with the pause and
 * the words.
 */
export interface SttTurnEnd {
  /** How sure the provider is, 0..1; null where it gives no figure (a silence-based endpoint). */
  confidence: number | null;
}

export interface SttStreamEvents {
  partial?: (result: SttResult) => void;
  final?: (result: SttResult) => void;
  /** The recogniser judged the turn over; follows the partial that carries the turn's words. */
  endOfTurn?: (signal: SttTurnEnd) => void;
  /** The engine failed (e.g. STT_ENGINE_CRASHED); the stream is dead and the call should end. */
  error?: (err: Error & { code: string }) => void;
}

/** One utterance-at-a-time recogniser bound to one call. */
export interface SttStream {
  /** Push inbound audio (the stream's own sample rate). Cheap: never blocks the event loop. */
  push(samples: Int16Array): void;
  /**
   * The call's VAD heard the caller stop: read what was pushed so far now, as if the pause will
   * last, and give it as a partial result (or give again the reading already made of this pause).
   * For recognisers that read at pauses; the end of turn decides on it sooner than on their own ear.
   */
  readNow?(): void;
  /**
   * A recogniser that reads as the audio comes (a streaming provider's interim results): the longest it may hear the
   * caller speak without giving any result (a partial, a verdict, a final) before the call counts it as failed.
   * Absent for one that reads only when asked.
   */
  readonly firstResultWithinMs?: number;
  /** End of the user's turn: resolves with the final transcript of what was pushed since the last finalize. */
  finalize(): Promise<SttResult>;
  /** Drop the current utterance without a result (barge-in, hangup). */
  cancel(): void;
  /** Release the decoder; the stream cannot be used afterwards. */
  close(): Promise<void>;
}

export interface SttStreamOptions {
  sampleRate: number;
  /**
   * How the line carried the audio (pushed here decoded to PCM16): a recogniser that takes μ-law
   * sends a μ-law line's audio as μ-law, byte for byte what came (G.711 decodes and re-encodes
   * exactly). linear16 when absent.
   */
  lineEncoding?: 'mulaw' | 'linear16';
  language: string;
  /** Phrases that bias recognition; out-of-vocabulary speech still comes out as heard. */
  phrases?: string[];
  events?: SttStreamEvents;
  signal?: AbortSignal;
}

export interface SttEngine {
  readonly name: string;
  open(options: SttStreamOptions): Promise<SttStream>;
  /** Release worker threads and connections; open streams fail with a coded error. */
  close(): Promise<void>;
}

export interface TtsSynthesisOptions {
  voiceId?: string;
  speed?: number;
  /** Output sample rate the caller wants (the engine resamples). */
  sampleRate: number;
  signal?: AbortSignal;
  /** Drop the voice's silent lead-in (speech/tts/output.ts): for the first words after a pause. */
  trimLeadIn?: boolean;
}

/** One utterance spoken by a streaming voice: its text goes in as it comes, its audio comes out as it is made. */
export interface TtsUtteranceStream {
  /** More of the utterance's text (as the voice should say it), as the model streams it. */
  write(text: string): void;
  /** No more text: the voice says what it holds, then the audio ends. */
  end(): void;
  /** Barge-in or hang-up: the voice drops what it still had to say; the audio ends at once. */
  cancel(): void;
  /**
   * The audio at the session's rate, in order; read once. Ends after end() once all is said, or at
   * cancel(); throws a coded SpeechError when the provider fails.
   */
  audio(): AsyncIterable<PcmChunk>;
  /**
   * The words the voice has timed so far (its spoken text), seconds from this utterance's first
   * sample; null for a voice that does not time words.
   */
  readonly words: readonly WordTiming[] | null;
}

export interface TtsSessionOptions {
  /** The line's rate: 8 kHz asks the provider for μ-law (a phone line's own coding), 16 kHz for PCM16. */
  sampleRate: MediaRate;
}

/**
 * One call's voice over one provider connection: opened when the call first speaks, reused by every
 * utterance of the call, closed with it. Utterances are spoken one after another.
 */
export interface TtsSession {
  utterance(): TtsUtteranceStream;
  close(): Promise<void>;
}

export interface TtsEngine {
  readonly name: string;
  /** Text chunk in, PCM out as soon as it exists; stops promptly when the signal aborts. */
  synthesize(text: string, options: TtsSynthesisOptions): AsyncIterable<PcmChunk>;
  /** A streaming voice's per-call session; a call uses it instead of synthesize() when present. */
  openSession?(options: TtsSessionOptions): TtsSession;
  /** Release processes and connections the engine keeps warm. */
  close(): Promise<void>;
}

export interface VadEvent {
  type: 'speech_start' | 'speech_end';
  /** Seconds on the audio clock of the samples pushed so far. */
  at: number;
}

export interface VadStream {
  /**
   * Push PCM at the stream's sample rate; resolves with the events this audio produced.
   * Async because model inference runs off the event loop; calls are processed in order.
   */
  push(samples: Int16Array): Promise<VadEvent[]>;
  /** Probability of speech in the last analysed window, 0..1. */
  readonly lastProbability: number;
  readonly speaking: boolean;
  reset(): void;
  close(): void;
}

export interface VadOptions {
  sampleRate: 8000 | 16000;
  /** Probability at or above which a window counts as speech. */
  threshold?: number;
  /** Probability below which a speaking window counts as silence. */
  negativeThreshold?: number;
  minSpeechMs?: number;
  minSilenceMs?: number;
}

export interface VadEngine {
  readonly name: string;
  open(options: VadOptions): Promise<VadStream>;
  /** Release the shared model sessions. */
  close(): Promise<void>;
}

/**
 * A shared engine held by one call. The provider may close engines no call holds (to keep their
 * number bounded), never one under a lease; release() when the call is done with it. Releasing
 * twice counts once.
 */
export interface EngineLease<E> {
  readonly engine: E;
  release(): void;
}

/** The speech engines calls share; one decoder or voice process is opened per call from these. */
export interface SpeechEngineProvider {
  vad: VadEngine;
  stt(config: AgentConfig['stt']): EngineLease<SttEngine>;
  tts(config: AgentConfig['voice']): EngineLease<TtsEngine>;
  close(): Promise<void>;
}
