import { CodedError } from '../../errors.ts';

// STT errors carry a stable code so the call engine and tests match on codes, never on text.
// The call engine ends a call with error_service on any of them.
export type SttErrorCode =
  /** The native decoder or its worker thread died; the stream is unusable. */
  | 'STT_ENGINE_CRASHED'
  /** The native addon is not built (run `npm run setup`). */
  | 'STT_ADDON_MISSING'
  /** A model file or folder is missing or the decoder refused its configuration. */
  | 'STT_MODEL_INVALID'
  /** The stream was used after close(). */
  | 'STT_STREAM_CLOSED'
  /** A sample rate the engine cannot take. */
  | 'STT_UNSUPPORTED_RATE'
  /** The agent's STT configuration is incomplete for the chosen engine. */
  | 'STT_CONFIG_INVALID'
  /** A transcription endpoint answered with a non-2xx status. */
  | 'STT_HTTP_STATUS'
  /** A transcription endpoint answered with a body that does not match its schema. */
  | 'STT_BAD_RESPONSE'
  /** A transcription request failed on the network or timed out. */
  | 'STT_HTTP_FAILED'
  /** A streaming provider could not be reached (network, egress policy, handshake timeout). */
  | 'STT_PROVIDER_UNREACHABLE'
  /**
   * A streaming provider refused the stream at the upgrade (a wrong key, an unknown model): `status` holds its HTTP
   * status.
   */
  | 'STT_PROVIDER_REFUSED'
  /** A streaming provider ended the stream with an error, or it closed unasked. */
  | 'STT_PROVIDER_ERROR'
  /** A streaming provider did not answer in time (its session start, or a final result). */
  | 'STT_PROVIDER_TIMEOUT'
  /** The stream's AbortSignal fired or cancel() dropped the pending utterance. */
  | 'STT_ABORTED';

export class SttError extends CodedError<SttErrorCode> {
  /** HTTP status for STT_HTTP_STATUS and STT_PROVIDER_REFUSED. */
  readonly status: number | undefined;
  constructor(code: SttErrorCode, message: string, options: { cause?: unknown; status?: number } = {}) {
    super(code, message, options);
    this.status = options.status;
  }
}

export function isSttError(err: unknown, code?: SttErrorCode): err is SttError {
  return err instanceof SttError && (code === undefined || err.code === code);
}
