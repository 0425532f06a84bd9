// X-Plivo-Signature-V3: every request Plivo sends (answer URL, hangup and ring callbacks, a
// transfer's aleg_url, <Dial> action and callbackUrl) is signed with the account's Auth Token, as
// Plivo documents its V3 signature and its own SDK checks it:
//
//   X-Plivo-Signature-V3-Nonce: <random string, new each request>
//   X-Plivo-Signature-V3:       base64(HMAC-SHA256(auth_token, <signed text> + "." + nonce))
//                               — several may come, comma-separated: any one matching is enough.
//   signed text, GET:  scheme://host[:port]/path, then "?" + the query's parameters sorted by name
//                      (each name's values sorted), as name=value joined with "&" (nothing when no query).
//   signed text, POST: scheme://host[:port]/path + "?" + the sorted query (as for GET), then "." when the
//                      URL has a query and the body has parameters, then every body parameter sorted by
//                      name (values sorted) as name+value with nothing between; "?" is left out only
//                      when there is neither a query nor a body parameter.
//
// The nonce makes each signature different, but Plivo signs no time: a captured request could be
// sent again, which the carrier's call id answers (inbound-call.ts gives a repeated call the first answer).
import { createHmac, timingSafeEqual } from 'node:crypto';

export type PlivoParams = Record<string, string | string[]>;

const valuesOf = (value: string | string[]): string[] => (Array.isArray(value) ? [...value].sort() : [value]);

function mergedQuery(url: URL): PlivoParams {
  const params: Record<string, string[]> = {};
  for (const [name, value] of url.searchParams) (params[name] ??= []).push(value);
  return params;
}

/** The text Plivo signs (before ".nonce"), for a request of `method` to `url` with body `params`. */
export function plivoSignedText(method: 'GET' | 'POST', url: string, params: PlivoParams = {}): string {
  const parsed = new URL(url);
  const base = `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  const query = mergedQuery(parsed);
  const queryText = Object.keys(query)
    .sort()
    .flatMap((name) => valuesOf(query[name]!).map((value) => `${name}=${value}`))
    .join('&');
  if (method === 'GET') return queryText ? `${base}?${queryText}` : base;
  const names = Object.keys(params).sort();
  const bodyText = names.flatMap((name) => valuesOf(params[name]!).map((value) => name + value)).join('');
  if (!queryText && names.length === 0) return base;
  return `${base}?${queryText}${queryText && names.length > 0 ? '.' : ''}${bodyText}`;
}

export function plivoSignatureV3(
  authToken: string,
  method: 'GET' | 'POST',
  url: string,
  params: PlivoParams,
  nonce: string,
): string {
  return createHmac('sha256', authToken)
    .update(`${plivoSignedText(method, url, params)}.${nonce}`, 'utf8')
    .digest('base64');
}

export interface SignedRequest {
  method: 'GET' | 'POST';
  /** The address Plivo called: PUBLIC_URL + path and query. */
  url: string;
  params: PlivoParams;
  signature: string | undefined;
  nonce: string | undefined;
}

/** Whether one of the request's comma-separated V3 signatures is the account's. */
export function isValidPlivoSignature(authToken: string, request: SignedRequest): boolean {
  const { signature, nonce } = request;
  if (!signature || !nonce) return false;
  const expected = Buffer.from(plivoSignatureV3(authToken, request.method, request.url, request.params, nonce));
  let valid = false;
  for (const candidate of signature.split(',')) {
    const presented = Buffer.from(candidate.trim());
    if (presented.length === expected.length && timingSafeEqual(presented, expected)) valid = true;
  }
  return valid;
}
