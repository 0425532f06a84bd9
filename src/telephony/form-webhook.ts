// Carrier webhooks post application/x-www-form-urlencoded bodies and sign them; this scope
// parses such bodies and refuses a bad X-Twilio-Signature with 403 when a token is configured.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';
import { isValidTwilioSignature, type FormParams } from './twilio-signature.ts';

export function addFormParser(app: FastifyInstance): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    const params: FormParams = {};
    for (const [name, value] of new URLSearchParams(body as string)) {
      const existing = params[name];
      if (existing === undefined) params[name] = value;
      else params[name] = Array.isArray(existing) ? [...existing, value] : [existing, value];
    }
    done(null, params);
  });
}

/** Checks the signature against PUBLIC_URL + the path Twilio called (decisions.md). */
export function verifyTwilioRequest(request: FastifyRequest, authToken: string | undefined, publicUrl: string): void {
  if (!authToken) return;
  const params = (request.body ?? {}) as FormParams;
  const url = `${publicUrl}${request.url}`;
  const signature = request.headers['x-twilio-signature'];
  if (!isValidTwilioSignature(authToken, url, params, typeof signature === 'string' ? signature : undefined)) {
    throw new ApiError('FORBIDDEN', 'X-Twilio-Signature does not match this request');
  }
}
