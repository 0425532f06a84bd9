// One request to a carrier's REST API, as every carrier's dialer and credentials check sends it:
// through the outbound layer (net/http.ts: the guarded pool, the egress policy), JSON in and out,
// bounded in time and in what is read back. A carrier that cannot be reached, or fails on its side,
// is a CarrierApiError: the call it was for ends with error_service.
import type { Clock } from '../clock.ts';
import { readTextCapped, sendRequest, type Dispatcher } from '../net/http.ts';
import type { DialResult } from '../records/dialer.ts';
import type { CarrierCallRepository } from './carrier-calls.ts';

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

/** How a carrier's dialer places one call through an organization's account. */
export interface CarrierCallRequest {
  /** The carrier's name as users know it, for messages ("Telnyx"). */
  carrier: string;
  /** The dialer's name, as the carrier call ids are kept under. */
  dialer: string;
  callId: string;
  carrierAccountId: string;
  carrierCalls: CarrierCallRepository;
  clock: Clock;
  /** Sends the create-call request. */
  send: () => Promise<CarrierAnswer>;
  /** The carrier's id of the call placed, from its answer; `idName` names it in a message when missing. */
  idOf: (body: Record<string, unknown>) => string | undefined;
  idName: string;
  /** The carrier's words in an error answer, as one line. */
  errorOf: (answer: CarrierAnswer) => string;
}

/**
 * Places a call: the account is recorded first (the carrier may call back before its answer is read, and a
 * callback is checked with the account's key), then the call's id. A 4xx the carrier gives the request itself (not
 * 401 or 429, which are ours or passing) is the call refused: dial_failed. Anything else that is not a call placed
 * is the carrier failing: thrown, and the call ends with error_service.
 */
export async function placeCarrierCall(r: CarrierCallRequest): Promise<DialResult> {
  await r.carrierCalls.record(r.callId, r.dialer, '', r.clock.now(), r.carrierAccountId);
  const answer = await r.send();
  if (answer.status === 200 || answer.status === 201) {
    const id = r.idOf(answer.body);
    if (!id)
      throw new CarrierApiError(`${r.carrier} accepted the call but its answer had no ${r.idName}`, answer.status);
    await r.carrierCalls.record(r.callId, r.dialer, id, r.clock.now(), r.carrierAccountId);
    return { status: 'dialing', carrierCallId: id };
  }
  if (answer.status >= 400 && answer.status < 500 && answer.status !== 401 && answer.status !== 429) {
    return {
      status: 'failed',
      reason: 'dial_failed',
      message: `${r.carrier} refused the call: ${r.errorOf(answer) || `HTTP ${answer.status}`}`,
    };
  }
  throw new CarrierApiError(
    `${r.carrier} answered HTTP ${answer.status} to a call request: ${r.errorOf(answer)}`,
    answer.status,
  );
}
