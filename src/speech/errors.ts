import { CodedError } from '../errors.ts';

// Speech engine errors carry a stable code; callers (retries, call records) match on it.
export type SpeechErrorCode =
  | 'TTS_ENGINE_UNAVAILABLE'
  /** A native addon the engine needs is not built (run `npm run setup`). */
  | 'TTS_ADDON_MISSING'
  | 'TTS_SYNTHESIS_FAILED'
  | 'TTS_VOICE_UNKNOWN'
  | 'TTS_CONFIG_INVALID'
  | 'TTS_HTTP_ERROR'
  | 'TTS_BAD_RESPONSE'
  | 'TTS_ENGINE_CLOSED'
  /** A streaming voice's provider could not be reached (egress refused, no answer, handshake timeout). */
  | 'TTS_PROVIDER_UNREACHABLE'
  /** The provider refused the connection (its HTTP status: a wrong key, an unknown voice or model). */
  | 'TTS_PROVIDER_REFUSED'
  /** The provider reported an error on the socket (its own code only is kept). */
  | 'TTS_PROVIDER_ERROR'
  /** The provider closed the socket while an utterance was being spoken, or sent what its protocol does not allow. */
  | 'TTS_PROVIDER_DISCONNECTED'
  | 'VAD_MODEL_MISSING'
  | 'VAD_UNSUPPORTED_RATE'
  | 'VAD_BAD_OPTIONS'
  | 'VAD_STREAM_CLOSED'
  /** The noise suppressor's WebAssembly did not load. */
  | 'DENOISE_UNAVAILABLE';

export class SpeechError extends CodedError<SpeechErrorCode> {}
