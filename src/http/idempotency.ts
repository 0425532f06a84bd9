// Idempotency-Key on the routes that place calls or start campaigns: a retry of a request whose
// answer was lost returns that answer (marked Idempotent-Replayed) and creates nothing; the same
// key with another body is a 409. Only successful answers are kept: a refused request may be fixed
// and sent again under its key.
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.ts';
import { ApiError } from '../errors.ts';
import type { IdempotencyStore } from '../store/idempotency.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route honours the Idempotency-Key header. */
    idempotent?: boolean;
  }
  interface FastifyRequest {
    /** The key this request holds until its answer is sent. */
    idempotencyKey?: string;
  }
}

export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** Printable ASCII without spaces, as Stripe and the IETF draft allow; a UUID fits easily. */
const KEY = /^[\x21-\x7e]{1,255}$/;

function keyOf(request: FastifyRequest): string | undefined {
  const value = request.headers[IDEMPOTENCY_HEADER];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !KEY.test(value)) {
    throw new ApiError(
      'BAD_REQUEST',
      'Idempotency-Key: give one key of 1 to 255 printable ASCII characters (a UUID is a good key)',
    );
  }
  return value;
}

/** The request as the route understood it: a retry with the same meaning matches. */
function fingerprint(request: FastifyRequest): string {
  return createHash('sha256')
    .update(`${request.method} ${request.routeOptions.url}\n${JSON.stringify(request.body ?? null)}`)
    .digest('hex');
}

export function idempotentRoutes(app: FastifyInstance, store: IdempotencyStore, clock: Clock): void {
  // After validation: a malformed request is refused before it can hold a key.
  app.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    if (!request.routeOptions.config.idempotent) return;
    const key = keyOf(request);
    if (key === undefined) return;
    const claim = await store.claim(request.orgId, key, fingerprint(request), clock.now());
    switch (claim.kind) {
      case 'claimed':
        request.idempotencyKey = key;
        return;
      case 'replay':
        return reply
          .code(claim.answer.status)
          .header('idempotent-replayed', 'true')
          .type('application/json; charset=utf-8')
          .send(claim.answer.body);
      case 'mismatch':
        throw new ApiError(
          'IDEMPOTENCY_KEY_REUSED',
          'this Idempotency-Key was used with a different request in the last 24 hours; use a new key for a new request',
        );
      case 'in_progress':
        throw new ApiError(
          'IDEMPOTENCY_IN_PROGRESS',
          'the first request with this Idempotency-Key has not finished (or the service stopped during it); look for its result before using a new key',
        );
    }
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const key = request.idempotencyKey;
    if (key === undefined) return payload;
    request.idempotencyKey = undefined;
    if (reply.statusCode < 300 && typeof payload === 'string')
      await store.finish(request.orgId, key, { status: reply.statusCode, body: payload });
    else await store.release(request.orgId, key);
    return payload;
  });
}
