// Messages between the main thread and a flite worker. A worker runs one synthesis at a time;
// every message about it names the job (jid). Cancel is not a message: the worker is busy inside
// the addon while it speaks, so the main thread flips the job's shared cancel flag instead.
export type ToWorker =
  | {
      op: 'synth';
      jid: number;
      voice: string;
      text: string;
      /** flite duration_stretch: 0.5 speaks twice as fast. */
      stretch: number;
      /** Int32Array over a SharedArrayBuffer; [0] !== 0 means stop. */
      cancel: Int32Array;
    }
  /** Register a voice and speak a word to nowhere, so the next real sentence is warm. */
  | { op: 'warm'; voice: string };

export type FliteWorkerErrorCode = 'TTS_ADDON_MISSING' | 'TTS_VOICE_UNKNOWN' | 'TTS_SYNTHESIS_FAILED';

export type FromWorker =
  | { ev: 'audio'; jid: number; samples: Int16Array; sampleRate: number }
  /** The job is over; completed is false when it stopped on its cancel flag. */
  | { ev: 'done'; jid: number; completed: boolean }
  | { ev: 'error'; jid: number; code: FliteWorkerErrorCode; message: string };

export interface FliteWorkerData {
  addonPath: string;
}
