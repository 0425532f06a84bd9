// A carrier account's credentials are tried before they are stored, with the cheapest authenticated
// request its carrier offers (each carrier's account-check.ts names it). A refusal (401/403) or an
// unknown account (404) is a 400 naming the field, and nothing is stored; the carrier not answering,
// or answering anything else, is a 502: the credentials may be fine. Sent through the outbound layer
// (net/http.ts) to the carrier's API base setting, like every request the service makes.
import type { CarrierAccountCheck } from '../carrier-accounts/service.ts';
import type { CarrierCredentials } from '../carrier-accounts/schema.ts';
import { ApiError } from '../errors.ts';
import type { Dispatcher } from '../net/http.ts';
import { sendCarrierRequest, type CarrierAnswer } from './carrier-rest.ts';

export interface AccountCheckOptions {
  /** The carrier's API base setting (TWILIO_API_BASE, TELNYX_API_BASE, …). */
  apiBase: string;
  dispatcher: Dispatcher;
  timeoutMs?: number;
}

/**
 * One carrier's probe of given credentials: a GET of `url` with `headers`, or its own `send` (a carrier whose SDK
 * sends it, through the outbound layer too), answering as sendCarrierRequest does.
 */
export type CredentialsProbe = ProbeWords &
  ({ url: string; headers: Record<string, string> } | { send: (timeoutMs: number) => Promise<CarrierAnswer> });

interface ProbeWords {
  /** The carrier's name as users know it, for the messages. */
  carrier: string;
  /** What a 401/403 says, naming the field (the carrier's own message, if any, is `detail`). */
  refused: (status: number, detail: string) => string;
  /** What a 404 says, naming the field. */
  unknown: (detail: string) => string;
  /** Reads a 200 answer: why the account cannot be used (e.g. suspended), or undefined when it can. */
  unusable?: (answer: Record<string, unknown>) => string | undefined;
}

const ANSWER_BYTES = 16 * 1024;

/** A CarrierAccountCheck from a carrier's probe of the credentials given. */
export function accountCheck<C extends CarrierCredentials>(
  o: AccountCheckOptions,
  probe: (credentials: C, apiBase: string) => CredentialsProbe | Promise<CredentialsProbe>,
): CarrierAccountCheck {
  return async (given) => {
    const p = await probe(given as C, o.apiBase);
    let status: number;
    let answer: Record<string, unknown>;
    const timeoutMs = o.timeoutMs ?? 10_000;
    try {
      ({ status, body: answer } =
        'send' in p
          ? await p.send(timeoutMs)
          : await sendCarrierRequest(
              p.carrier,
              { method: 'GET', url: p.url, headers: p.headers, timeoutMs },
              o.dispatcher,
              ANSWER_BYTES,
            ));
    } catch (error) {
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
      throw new ApiError(
        'CARRIER_UNREACHABLE',
        `${p.carrier} could not be reached to check the credentials (${cause}); nothing was stored, try again`,
      );
    }
    const detail = detailOf(answer);
    if (status === 401 || status === 403)
      throw new ApiError('BAD_REQUEST', `${p.refused(status, detail)}; nothing was stored`);
    if (status === 404) throw new ApiError('BAD_REQUEST', `${p.unknown(detail)}; nothing was stored`);
    if (status !== 200) {
      throw new ApiError(
        'CARRIER_UNREACHABLE',
        `${p.carrier} answered HTTP ${status}${detail} to the credentials check; nothing was stored, try again`,
      );
    }
    const unusable = p.unusable?.(answer);
    if (unusable) throw new ApiError('BAD_REQUEST', `${unusable}; nothing was stored`);
  };
}

/**
 * The carrier's own words for a refusal: `message` (Twilio's shape), `error` (Plivo's), `detail` (Vonage's) or the
 * first of `errors` (Telnyx's).
 */
function detailOf(answer: Record<string, unknown>): string {
  const { message, error, detail: said, errors } = answer;
  for (const words of [message, error, said]) if (typeof words === 'string') return `: ${words.slice(0, 200)}`;
  const first: unknown = Array.isArray(errors) ? errors[0] : undefined;
  if (first && typeof first === 'object') {
    const { detail, title } = first as Record<string, unknown>;
    const words = typeof detail === 'string' ? detail : typeof title === 'string' ? title : undefined;
    if (words) return `: ${words.slice(0, 200)}`;
  }
  return '';
}
