// Where a Moonshine stream's audio is read: worker threads of this process (pool.ts), or the one
// recogniser process a machine's service processes share (machine-pool.ts, WORKERS > 1).
import type { MoonshineSize } from './recogniser.ts';

export interface UtteranceReader {
  readonly model: MoonshineSize;
  /** Resolves once the model is loaded, starting its threads if need be; rejects with why it cannot load. */
  ready(): Promise<void>;
  /** Text of one utterance, biased toward `phrases`; rejects with STT_ABORTED as soon as `signal` fires. */
  read(samples: Int16Array, sampleRate: number, phrases: readonly string[], signal?: AbortSignal): Promise<string>;
  /** Stops the threads and fails what is pending; a later ready() starts them again. */
  close(): Promise<void>;
}
