// Carrier webhooks post application/x-www-form-urlencoded bodies and sign them; this scope parses
// such bodies and refuses, with 403, a bad X-Twilio-Signature, and any request at all when no
// TWILIO_AUTH_TOKEN is set to check it with (unless TWILIO_SIGNATURE=off says to accept them). A
// carrier signing Twilio's way under its own header (SignalWire) passes its flavor.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../errors.ts';
import { TWILIO_FLAVOR, type TwilioFlavor } from './flavor.ts';
import { isValidTwilioSignature, type FormParams } from './signature.ts';

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

export interface WebhookSignature {
  authToken: string | undefined;
  /** TWILIO_SIGNATURE: on (the default) refuses what cannot be checked; off accepts it unchecked. */
  required: boolean;
}

/** Checks the signature against PUBLIC_URL + the path Twilio called (docs/twilio.md). */
export function verifyTwilioRequest(
  request: FastifyRequest,
  signing: WebhookSignature,
  publicUrl: string,
  flavor: TwilioFlavor = TWILIO_FLAVOR,
): void {
  const { authToken } = signing;
  if (!authToken) {
    if (!signing.required) return;
    throw new ApiError('FORBIDDEN', flavor.unsignedMessage);
  }
  const params = (request.body ?? {}) as FormParams;
  const url = `${publicUrl}${request.url}`;
  const header = flavor.signatureHeaders.find((name) => typeof request.headers[name.toLowerCase()] === 'string');
  const signature = header === undefined ? undefined : (request.headers[header.toLowerCase()] as string);
  if (!isValidTwilioSignature(authToken, url, params, signature)) {
    throw new ApiError('FORBIDDEN', `${flavor.signatureHeaders[0]} does not match this request`);
  }
}
