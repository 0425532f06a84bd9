// The bearer token of a request to Vonage's Voice API: a JWT the account's Voice application signs
// with its private key (RS256), `{"application_id", "iat", "exp", "jti"}` as Vonage documents it.
// Each request signs its own, short-lived.
import type { KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';

/** How long an API token lives. */
const TOKEN_TTL_S = 300;

export function applicationToken(applicationId: string, key: KeyObject, nowMs: number, jti: string): Promise<string> {
  const now = Math.floor(nowMs / 1000);
  return new SignJWT({ application_id: applicationId })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
    .setIssuedAt(now)
    .setExpirationTime(now + TOKEN_TTL_S)
    .setJti(jti)
    .sign(key);
}
