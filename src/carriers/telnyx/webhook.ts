// Telnyx webhooks, form-encoded (TeXML: the voice webhook, instruction fetches, status callbacks)
// or JSON (Call Control events), are signed over their raw bytes (signature.ts): this scope keeps
// each body's raw text beside its parsed form, and refuses with 403 one whose signature the
// account's public key does not verify — or any at all when no account's key can check it.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../errors.ts';
import { keepRawBody, rawBodyOf } from '../raw-bodies.ts';
import { isValidTelnyxSignature } from './signature.ts';

/**
 * Parses form bodies in `scope` (and JSON ones with `json`, in place of the service's own JSON parser), keeping the
 * raw text the signature covers.
 */
export function addSignedBodyParsers(scope: FastifyInstance, o: { json: boolean } = { json: false }): void {
  scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (request, body, done) => {
    keepRawBody(request, body as string);
    const params: Record<string, string> = {};
    for (const [name, value] of new URLSearchParams(body as string)) params[name] ??= value;
    done(null, params);
  });
  if (!o.json) return;
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    keepRawBody(request, body as string);
    try {
      const parsed: unknown = JSON.parse(body as string);
      done(null, parsed);
    } catch {
      done(new ApiError('BAD_REQUEST', 'the body is not JSON'), undefined);
    }
  });
}

const header = (request: FastifyRequest, name: string): string | undefined => {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
};

/** 403 unless the request is signed by the holder of `publicKey` (undefined: nobody's key can check it). */
export function verifyTelnyxRequest(request: FastifyRequest, publicKey: string | undefined, nowMs: number): void {
  if (!publicKey) {
    throw new ApiError(
      'FORBIDDEN',
      'this Telnyx webhook is refused: no Telnyx carrier account holds the number or call it is about, so its signature cannot be checked',
    );
  }
  const valid = isValidTelnyxSignature(
    publicKey,
    {
      rawBody: rawBodyOf(request) ?? '',
      signature: header(request, 'telnyx-signature-ed25519'),
      timestamp: header(request, 'telnyx-timestamp'),
    },
    nowMs,
  );
  if (!valid)
    throw new ApiError('FORBIDDEN', 'telnyx-signature-ed25519 does not match this request and its telnyx-timestamp');
}

/** A string field of a parsed body, read before it is validated (to pick the key that checks it). */
export function bodyField(request: FastifyRequest, name: string): string | undefined {
  const body = request.body;
  if (!body || typeof body !== 'object') return undefined;
  const value = (body as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}
