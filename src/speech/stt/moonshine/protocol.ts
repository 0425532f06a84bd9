// Messages between the Moonshine engine and its worker threads.
import type { SttErrorCode } from '../errors.ts';

export type ToMoonshineWorker =
  /** One utterance at `sampleRate` (its buffer is transferred), biased toward `phrases`. */
  | { type: 'transcribe'; job: number; samples: Int16Array; sampleRate: number; phrases: string[] }
  /** Stop reading `job` if it is the one under way: it answers with STT_ABORTED. */
  | { type: 'cancel'; job: number }
  /** Finish the utterance under way, release the model and exit. */
  | { type: 'close' };

export type FromMoonshineWorker =
  | { type: 'ready' }
  /** The model did not load: the worker exits after this. */
  | { type: 'failed'; code: SttErrorCode; message: string }
  | { type: 'result'; job: number; text: string }
  | { type: 'error'; job: number; code: SttErrorCode; message: string };
