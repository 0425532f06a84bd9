// Plivo's requests to the service (answer URL, callbacks) come as form POSTs — or GETs, when the
// application's method says so — signed with X-Plivo-Signature-V3 (signature.ts) over the address
// Plivo called and the parameters. This scope parses form bodies; verifyPlivoRequest refuses with
// 403 one whose signature the account's Auth Token does not make, or any at all when no account's
// token can check it.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../errors.ts';
import { isValidPlivoSignature, type PlivoParams } from './signature.ts';

export function addPlivoFormParser(scope: FastifyInstance): void {
  scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    const params: PlivoParams = {};
    for (const [name, value] of new URLSearchParams(body as string)) {
      const existing = params[name];
      if (existing === undefined) params[name] = value;
      else params[name] = Array.isArray(existing) ? [...existing, value] : [existing, value];
    }
    done(null, params);
  });
}

const header = (request: FastifyRequest, name: string): string | undefined => {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
};

/** The request's parameters: the form body of a POST, the query of a GET. */
export function plivoParams(request: FastifyRequest): Record<string, unknown> {
  const source = request.method === 'GET' ? request.query : request.body;
  return source && typeof source === 'object' ? (source as Record<string, unknown>) : {};
}

/** A string parameter, read before it is validated (to pick the token that checks it). */
export function plivoParam(request: FastifyRequest, name: string): string | undefined {
  const value = plivoParams(request)[name];
  return typeof value === 'string' ? value : undefined;
}

/** The request_uuid of the API call a request is about: ALegRequestUUID, as documented, or RequestUUID. */
export function requestUuidOf(request: FastifyRequest): string | undefined {
  return plivoParam(request, 'ALegRequestUUID') || plivoParam(request, 'RequestUUID') || undefined;
}

/** 403 unless the request is signed with `authToken` (undefined: nobody's token can check it). */
export function verifyPlivoRequest(request: FastifyRequest, authToken: string | undefined, publicUrl: string): void {
  if (!authToken) {
    throw new ApiError(
      'FORBIDDEN',
      'this Plivo request is refused: no Plivo carrier account holds the number or call it is about, so its signature cannot be checked',
    );
  }
  const method = request.method === 'GET' ? 'GET' : 'POST';
  const valid = isValidPlivoSignature(authToken, {
    method,
    url: `${publicUrl}${request.url}`,
    params: method === 'POST' ? ((request.body ?? {}) as PlivoParams) : {},
    signature: header(request, 'x-plivo-signature-v3'),
    nonce: header(request, 'x-plivo-signature-v3-nonce'),
  });
  if (!valid) throw new ApiError('FORBIDDEN', 'X-Plivo-Signature-V3 does not match this request and its nonce');
}
