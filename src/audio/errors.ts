import { CodedError } from '../errors.ts';

// Audio errors carry a stable code so callers and tests match on codes, never on text.
export type AudioErrorCode =
  | 'AUDIO_UNSUPPORTED_RATE'
  | 'AUDIO_BAD_FRAME_SIZE'
  | 'AUDIO_BAD_WAV'
  | 'AUDIO_STREAM_CLOSED'
  | 'AUDIO_BAD_ARGUMENT'
  /** The Opus addon did not build or load (it is compiled at install from its bundled libopus). */
  | 'AUDIO_OPUS_UNAVAILABLE'
  | 'AUDIO_G722_MISSING'
  /** An Opus packet libopus cannot decode. */
  | 'AUDIO_BAD_OPUS_PACKET';

export class AudioError extends CodedError<AudioErrorCode> {}
