// One table of coded errors for the model client, so callers and tests match on codes, never on text.
import { CodedError } from '../errors.ts';

export const LLM_ERRORS = {
  LLM_HTTP_STATUS: { retryable: false, message: 'model server answered with an error status' },
  LLM_CONNECT_TIMEOUT: { retryable: true, message: 'could not connect to the model server in time' },
  LLM_NETWORK: { retryable: true, message: 'network error talking to the model server' },
  LLM_FIRST_TOKEN_TIMEOUT: { retryable: true, message: 'model server sent no token in time' },
  LLM_STALLED: { retryable: false, message: 'model stream stalled mid-reply' },
  LLM_STREAM_ERROR: { retryable: true, message: 'model stream reported an error' },
  LLM_BAD_CHUNK: { retryable: false, message: 'model stream sent a malformed chunk' },
  LLM_BAD_RESPONSE: { retryable: false, message: 'model server sent a malformed response' },
  LLM_REPLY_TOO_LARGE: { retryable: false, message: 'model reply was longer than the service accepts' },
  LLM_ABORTED: { retryable: false, message: 'model request was aborted' },
} as const;

export type LlmErrorCode = keyof typeof LLM_ERRORS;

export class LlmError extends CodedError<LlmErrorCode> {
  /** HTTP status, for LLM_HTTP_STATUS. */
  readonly status: number | undefined;
  /** Whether trying again (before the first token) may help. */
  readonly retryable: boolean;

  constructor(
    code: LlmErrorCode,
    detail?: string,
    opts: { status?: number; cause?: unknown; retryable?: boolean } = {},
  ) {
    super(code, detail ? `${LLM_ERRORS[code].message}: ${detail}` : LLM_ERRORS[code].message, opts);
    this.status = opts.status;
    this.retryable = opts.retryable ?? LLM_ERRORS[code].retryable;
  }
}

export function isLlmError(err: unknown, code?: LlmErrorCode): err is LlmError {
  return err instanceof LlmError && (code === undefined || err.code === code);
}

/**
 * What a call record may say of a model failure: its kind and an HTTP status, never the server's
 * words or a socket's error code (an organization must not learn the service's network from them).
 */
export function publicLlmFailure(error: LlmError): string {
  return error.code === 'LLM_HTTP_STATUS' && error.status !== undefined
    ? `${LLM_ERRORS[error.code].message} (HTTP ${error.status})`
    : LLM_ERRORS[error.code].message;
}
