// Vonage's signed webhooks: an HS256 JWT in Authorization: Bearer, signed with the account's
// signature secret, whose payload_hash is the sha256 of the body; checked against the injected clock.
import { createHash, randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { isValidVonageSignature, VONAGE_SIGNATURE_DEFAULTS } from '../../../src/carriers/vonage/signature.ts';

const SECRET = 'a-signature-secret-of-the-account';
const APPLICATION = randomUUID();
const NOW_MS = 1_764_000_000_000;
const NOW_S = NOW_MS / 1000;
const BODY = '{"uuid":"63f61863","status":"answered","from":"14155550100","to":"14155559400"}';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

async function token(
  o: { iat?: number; exp?: number; hash?: string; secret?: string; application?: string; alg?: string } = {},
) {
  const jwt = new SignJWT({
    iss: 'Vonage',
    api_key: 'abcd1234',
    application_id: o.application ?? APPLICATION,
    payload_hash: o.hash ?? sha256(BODY),
  })
    .setProtectedHeader({ alg: o.alg ?? 'HS256', typ: 'JWT' })
    .setIssuedAt(o.iat ?? NOW_S)
    .setJti(randomUUID());
  if (o.exp !== undefined) jwt.setExpirationTime(o.exp);
  return `Bearer ${await jwt.sign(new TextEncoder().encode(o.secret ?? SECRET))}`;
}

const check = (authorization: string | undefined, rawBody = BODY, nowMs = NOW_MS) =>
  isValidVonageSignature(SECRET, APPLICATION, { authorization, rawBody }, nowMs);

describe('Vonage signed webhooks', () => {
  it('accepts a token signed with the secret whose payload_hash is the sha256 of the body', async () => {
    expect(await check(await token())).toBe(true);
  });

  it('accepts a GET (no body) on the token alone', async () => {
    expect(await check(await token({ hash: sha256('something else') }), '')).toBe(true);
  });

  it('refuses a changed body, another secret, another application, no token and a malformed header', async () => {
    expect(await check(await token(), `${BODY} `)).toBe(false);
    expect(await check(await token({ secret: 'another-accounts-secret' }))).toBe(false);
    expect(await check(await token({ application: randomUUID() }))).toBe(false);
    expect(await check(undefined)).toBe(false);
    expect(await check((await token()).replace('Bearer ', 'Basic '))).toBe(false);
    expect(await check('Bearer not.a.jwt')).toBe(false);
  });

  it('refuses a token issued too long ago, one issued in the future, and one expired', async () => {
    const maxAge = VONAGE_SIGNATURE_DEFAULTS.maxAgeS;
    expect(await check(await token({ iat: NOW_S - maxAge + 10 }))).toBe(true);
    expect(await check(await token({ iat: NOW_S - maxAge - VONAGE_SIGNATURE_DEFAULTS.clockToleranceS - 1 }))).toBe(
      false,
    );
    expect(await check(await token({ iat: NOW_S + VONAGE_SIGNATURE_DEFAULTS.clockToleranceS + 60 }))).toBe(false);
    expect(await check(await token({ exp: NOW_S - VONAGE_SIGNATURE_DEFAULTS.clockToleranceS - 1 }))).toBe(false);
  });

  it('refuses a token of another algorithm, even with the same secret', async () => {
    expect(await check(await token({ alg: 'HS512' }))).toBe(false);
  });
});
