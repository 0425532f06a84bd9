// Telnyx's REST API through its official SDK (the `telnyx` package): one client per account (its
// API key), pointed at TELNYX_API_BASE + /v2 and sending every request through the outbound layer
// (net/fetch.ts over the guarded dispatcher), so the egress policy holds and tests reach the
// stand-in. The SDK's own policy is set to the service's: no retries (a call placed twice is two
// calls; the caller of a failed request decides), the request timeout the carrier requests had,
// no logging of its own, and no credentials read from the environment (only the account's key).
// Its answers are read as every carrier's are (carrier-rest.ts): an HTTP error is an answer with
// Telnyx's status and body ({errors: [{code, title, detail}]}, the SDK's APIError carries both);
// no answer at all is a CarrierApiError.
import Telnyx, { APIError } from 'telnyx';
import { fetchThrough } from '../../net/fetch.ts';
import type { Dispatcher } from '../../net/http.ts';
import { CarrierApiError, type CarrierAnswer } from '../carrier-rest.ts';

export const TELNYX_REST_DEFAULTS = {
  /** The longest wait for an answer, as every carrier request has. */
  timeoutMs: 15_000,
  /** A Telnyx answer longer than this is not one the service reads. */
  answerBytes: 64 * 1024,
} as const;

export interface TelnyxRestOptions {
  /** TELNYX_API_BASE, without a trailing slash. */
  apiBase: string;
  dispatcher: Dispatcher;
  timeoutMs?: number;
  /** The longest answer read; TELNYX_REST_DEFAULTS.answerBytes by default. */
  answerBytes?: number;
}

/** Builds Telnyx clients for accounts' keys, every one sending through `o.dispatcher`. */
export function telnyxClients(o: TelnyxRestOptions): (apiKey: string) => Telnyx {
  const through = fetchThrough(o.dispatcher, { maxBodyBytes: o.answerBytes ?? TELNYX_REST_DEFAULTS.answerBytes });
  const fetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    // The SDK sends a URL and its init; a Request would carry what the outbound layer does not see.
    if (input instanceof Request) return Promise.reject(new TypeError('a Request object is not sent through here'));
    return through(input, init);
  };
  return (apiKey) =>
    new Telnyx({
      apiKey,
      publicKey: null,
      clientID: null,
      clientSecret: null,
      baseURL: `${o.apiBase}/v2`,
      fetch,
      maxRetries: 0,
      timeout: o.timeoutMs ?? TELNYX_REST_DEFAULTS.timeoutMs,
      logLevel: 'off',
    });
}

/**
 * The TeXML call create's parameters: the SDK's, and the TeXML call parameters Telnyx documents that its types do not
 * list (they ride in the same JSON body).
 */
export type TexmlCallParams = Parameters<Telnyx['texml']['calls']['create']>[1] & {
  StatusCallback?: string;
  StatusCallbackMethod?: 'GET' | 'POST';
  StatusCallbackEvent?: string;
  Timeout?: number;
  MachineDetection?: string;
};
export type TransferParams = Parameters<Telnyx['calls']['actions']['transfer']>[1];

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** One SDK request's outcome: any HTTP answer (its status and JSON object), or a CarrierApiError when none came. */
export async function telnyxAnswer(request: {
  withResponse(): Promise<{ data: unknown; response: Response }>;
}): Promise<CarrierAnswer> {
  try {
    const { data, response } = await request.withResponse();
    return { status: response.status, body: isRecord(data) ? data : {} };
  } catch (error) {
    if (error instanceof APIError && typeof error.status === 'number')
      return { status: error.status, body: isRecord(error.error) ? error.error : {} };
    throw new CarrierApiError(`Telnyx could not be reached: ${(error as Error).message}`, undefined, { cause: error });
  }
}
