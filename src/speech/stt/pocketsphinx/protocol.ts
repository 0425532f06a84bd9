// Messages between the main thread and a decoder worker. One worker serves many streams; every
// message names its stream (sid). Requests that answer carry a req number.
import type { SttResult } from '../../types.ts';
import type { ModelSpec } from './models.ts';

export type ToWorker =
  | {
      op: 'open';
      sid: number;
      req: number;
      model: ModelSpec;
      /** Wideband streams: the model to switch to if the caller's audio turns out to be narrowband. */
      narrowbandModel: ModelSpec | null;
      sampleRate: number;
      partialEveryMs: number;
      phrases: string[];
    }
  | { op: 'audio'; sid: number; samples: Int16Array }
  | { op: 'finalize'; sid: number; req: number }
  | { op: 'cancel'; sid: number }
  | { op: 'close'; sid: number; req: number }
  /** Test hook: make the worker die as a native crash would. */
  | { op: 'crash' };

export type FromWorker =
  | { ev: 'ok'; sid: number; req: number }
  | { ev: 'partial'; sid: number; text: string }
  | { ev: 'final'; sid: number; req: number; result: SttResult }
  | { ev: 'error'; sid: number; req: number | null; code: 'STT_MODEL_INVALID' | 'STT_ENGINE_CRASHED'; message: string };
