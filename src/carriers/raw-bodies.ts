// A carrier that signs the bytes of its webhooks (Telnyx) is checked against the body as it came,
// not as it parses: its routes keep the raw text here, and a node that passes the request on to
// the call's owner (http/forward.ts) sends that text, so the owner's check sees what the carrier signed.
import type { FastifyRequest } from 'fastify';

const rawBodies = new WeakMap<FastifyRequest, string>();

export function keepRawBody(request: FastifyRequest, text: string): void {
  rawBodies.set(request, text);
}

/** The body's text as received, when its route kept it. */
export function rawBodyOf(request: FastifyRequest): string | undefined {
  return rawBodies.get(request);
}
