// Vonage signs the Voice API's webhooks (answer and event URLs, with signed callbacks on) with the
// account's signature secret: `Authorization: Bearer <JWT>`, HS256, whose claims are, as Vonage
// documents them, { "iat": <seconds>, "jti": "<uuid>", "iss": "Vonage", "payload_hash": "<sha256 hex
// of the request body>", "api_key": "<account key>", "application_id": "<application>" }. A body
// whose sha256 is not the token's payload_hash was changed on the way; a token issued too long ago
// (or in the future) is refused, so a captured webhook cannot be replayed later. A token naming
// another application of the same account (the secret is the account's) is refused too.
import { createHash } from 'node:crypto';
import { jwtVerify } from 'jose';

export const VONAGE_SIGNATURE_DEFAULTS = {
  /** How old a webhook's token may be. */
  maxAgeS: 300,
  /** How far the sender's clock may run ahead of the service's. */
  clockToleranceS: 30,
} as const;

export interface SignedWebhook {
  /** The Authorization header as it came. */
  authorization: string | undefined;
  /** The body's raw text; empty for a GET. */
  rawBody: string;
}

/** Whether the webhook was signed with `secret` for `applicationId`, at a time within the tolerance of `nowMs`. */
export async function isValidVonageSignature(
  secret: string,
  applicationId: string,
  webhook: SignedWebhook,
  nowMs: number,
): Promise<boolean> {
  const token = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(webhook.authorization ?? '')?.[1];
  if (!token) return false;
  let claims: Record<string, unknown>;
  try {
    ({ payload: claims } = await jwtVerify(token, new TextEncoder().encode(secret), {
      algorithms: ['HS256'],
      currentDate: new Date(nowMs),
      maxTokenAge: VONAGE_SIGNATURE_DEFAULTS.maxAgeS,
      clockTolerance: VONAGE_SIGNATURE_DEFAULTS.clockToleranceS,
      requiredClaims: ['iat'],
    }));
  } catch {
    return false;
  }
  const iat = claims.iat as number;
  if (iat * 1000 > nowMs + VONAGE_SIGNATURE_DEFAULTS.clockToleranceS * 1000) return false;
  if (claims.application_id !== undefined && claims.application_id !== applicationId) return false;
  if (webhook.rawBody === '') return true;
  const hash = createHash('sha256').update(webhook.rawBody, 'utf8').digest('hex');
  return typeof claims.payload_hash === 'string' && claims.payload_hash.toLowerCase() === hash;
}
