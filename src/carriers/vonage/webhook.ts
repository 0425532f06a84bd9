// Vonage's webhooks (the answer URL, GET or JSON POST; the event URLs, JSON POST) carry a JWT signed
// with the account's signature secret over a hash of their body (signature.ts): this scope keeps
// each JSON body's raw text beside its parsed value, and refuses with 403 a request the account's
// secret does not verify — or any at all when no account's secret can check it.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../errors.ts';
import { keepRawBody, rawBodyOf } from '../raw-bodies.ts';
import type { VonageKeys } from './accounts.ts';
import { isValidVonageSignature } from './signature.ts';

/** Parses JSON bodies in `scope` in place of the service's own parser, keeping the raw text the signature covers. */
export function addSignedJsonParser(scope: FastifyInstance): void {
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    keepRawBody(request, body as string);
    try {
      const parsed: unknown = (body as string) === '' ? {} : JSON.parse(body as string);
      done(null, parsed);
    } catch {
      done(new ApiError('BAD_REQUEST', 'the body is not JSON'), undefined);
    }
  });
}

/** 403 unless the request was signed with the account's secret (undefined: no account's secret can check it). */
export async function verifyVonageRequest(
  request: FastifyRequest,
  keys: VonageKeys | undefined,
  nowMs: number,
): Promise<void> {
  if (!keys) {
    throw new ApiError(
      'FORBIDDEN',
      'this Vonage webhook is refused: no Vonage carrier account holds the number or call it is about, so its signature cannot be checked',
    );
  }
  const authorization = request.headers.authorization;
  const valid = await isValidVonageSignature(
    keys.signatureSecret,
    keys.applicationId,
    { authorization: typeof authorization === 'string' ? authorization : undefined, rawBody: rawBodyOf(request) ?? '' },
    nowMs,
  );
  if (!valid)
    throw new ApiError(
      'FORBIDDEN',
      "the Authorization token is not the account's signature of this request (signature secret, payload_hash, age)",
    );
}

/** A string field of the query (GET) or parsed JSON body (POST), read before it is validated (to pick the key). */
export function webhookField(request: FastifyRequest, name: string): string | undefined {
  const source = request.method === 'GET' ? request.query : request.body;
  if (!source || typeof source !== 'object') return undefined;
  const value = (source as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}
