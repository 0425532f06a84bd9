// One request to a carrier's REST API, as every carrier's dialer and credentials check sends it:
// through the outbound layer (net/http.ts: the guarded pool, the egress policy), JSON in and out,
// bounded in time and in what is read back. A carrier that cannot be reached, or fails on its side,
// is a CarrierApiError: the call it was for ends with error_service.
import { readTextCapped, sendRequest, type Dispatcher } from '../net/http.ts';

const ANSWER_BYTES = 64 * 1024;
const REQUEST_TIMEOUT_MS = 15_000;

export class CarrierApiError extends Error {
  override name = 'CarrierApiError';
  constructor(
    message: string,
    /** The carrier's HTTP status, when it answered. */
    readonly status: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A carrier's answer: its status and its JSON object (empty when it sent none). */
export interface CarrierAnswer {
  status: number;
  body: Record<string, unknown>;
}

export interface CarrierRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  /** Authorization and any other header the carrier wants; JSON's are added. */
  headers: Record<string, string>;
  json?: Record<string, unknown> | undefined;
  timeoutMs?: number;
}

/** Sends `r` to `carrier` (its name, for the error); any answer is returned, only no answer throws. */
export async function sendCarrierRequest(
  carrier: string,
  r: CarrierRequest,
  dispatcher: Dispatcher,
  answerBytes = ANSWER_BYTES,
): Promise<CarrierAnswer> {
  try {
    const res = await sendRequest(r.url, {
      method: r.method,
      headers: {
        ...r.headers,
        accept: 'application/json',
        ...(r.json ? { 'content-type': 'application/json' } : {}),
      },
      body: r.json ? JSON.stringify(r.json) : undefined,
      dispatcher,
      signal: AbortSignal.timeout(r.timeoutMs ?? REQUEST_TIMEOUT_MS),
    });
    return { status: res.statusCode, body: jsonObject(await readTextCapped(res.body, answerBytes)) };
  } catch (error) {
    throw new CarrierApiError(`${carrier} could not be reached: ${(error as Error).message}`, undefined, {
      cause: error,
    });
  }
}

/** A JSON object from a carrier's text, or an empty one for anything else. */
export function jsonObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
