// Audio errors carry a stable code so callers and tests match on codes, never on text.
export type AudioErrorCode =
  | 'AUDIO_UNSUPPORTED_RATE'
  | 'AUDIO_BAD_FRAME_SIZE'
  | 'AUDIO_BAD_WAV'
  | 'AUDIO_STREAM_CLOSED'
  | 'AUDIO_BAD_ARGUMENT';

export class AudioError extends Error {
  readonly code: AudioErrorCode;
  constructor(code: AudioErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AudioError';
    this.code = code;
  }
}
