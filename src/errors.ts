// Every error a client can see is made from this one table, so callers and tests match on
// `code`, never on text. Bodies are {error, details, code} (docs/contract.md, "Errors").

export const ERROR_TABLE = {
  BAD_REQUEST: { status: 400, error: 'invalid request' },
  MALFORMED_JSON: { status: 400, error: 'malformed JSON' },
  BAD_PAGINATION_KEY: { status: 400, error: 'invalid pagination_key' },
  UNAUTHORIZED: { status: 401, error: 'unauthorized' },
  REQUEST_TIMEOUT: { status: 408, error: 'request timeout' },
  FORBIDDEN: { status: 403, error: 'forbidden' },
  NOT_FOUND: { status: 404, error: 'not found' },
  CONFLICT: { status: 409, error: 'conflict' },
  NUMBER_TAKEN: { status: 409, error: 'number taken' },
  CREDENTIAL_NAME_TAKEN: { status: 409, error: 'credential name taken' },
  CREDENTIAL_IN_USE: { status: 409, error: 'credential in use' },
  CARRIER_ACCOUNT_IN_USE: { status: 409, error: 'carrier account in use' },
  IDEMPOTENCY_KEY_REUSED: { status: 409, error: 'idempotency key reused' },
  IDEMPOTENCY_IN_PROGRESS: { status: 409, error: 'idempotent request in progress' },
  BODY_TOO_LARGE: { status: 413, error: 'request body too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, error: 'unsupported media type' },
  UPGRADE_REQUIRED: { status: 426, error: 'upgrade required' },
  RATE_LIMITED: { status: 429, error: 'too many requests' },
  HEADERS_TOO_LARGE: { status: 431, error: 'request headers too large' },
  INTERNAL: { status: 500, error: 'internal error' },
  CARRIER_UNREACHABLE: { status: 502, error: 'carrier unreachable' },
  CODEC_UNAVAILABLE: { status: 501, error: 'codec unavailable' },
  SHUTTING_DOWN: { status: 503, error: 'shutting down' },
  NOT_READY: { status: 503, error: 'not ready' },
} as const;

export type ErrorCode = keyof typeof ERROR_TABLE;

/**
 * The one shape of every error the service raises: a stable `code` callers and tests match on,
 * a message for people and logs, and the cause. Each room makes its own class from it with the
 * codes it owns (`class SttError extends CodedError<SttErrorCode>`); `name` is the class's.
 */
export class CodedError<C extends string = string> extends Error {
  readonly code: C;

  constructor(code: C, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.name = new.target.name;
  }
}

export interface ErrorBody {
  error: string;
  details: string;
  code: ErrorCode;
}

export class ApiError extends CodedError<ErrorCode> {
  readonly status: number;
  readonly details: string;
  /** Extra response headers (WWW-Authenticate, Retry-After). */
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, details: string, options: { headers?: Record<string, string>; cause?: unknown } = {}) {
    super(code, `${ERROR_TABLE[code].error}: ${details}`, options);
    this.status = ERROR_TABLE[code].status;
    this.details = details;
    this.headers = options.headers ?? {};
  }

  toBody(): ErrorBody {
    return { error: ERROR_TABLE[this.code].error, details: this.details, code: this.code };
  }
}

export function notFound(what: string, id: string): ApiError {
  return new ApiError('NOT_FOUND', `${what} ${JSON.stringify(id)} does not exist`);
}
