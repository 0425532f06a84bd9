import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isValidTelnyxSignature, telnyxPublicKey } from '../../../src/carriers/telnyx/signature.ts';

const { publicKey, privateKey } = generateKeyPairSync('ed25519');
/** The account's public key as Telnyx shows it: base64 of the raw 32 bytes. */
const PUBLIC_KEY = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64');
const NOW_MS = 1_764_000_000_000;
const TIMESTAMP = String(NOW_MS / 1000);
const BODY = 'AccountSid=a&CallSid=v3%3Aabc&From=%2B14155550100&To=%2B14155559200';

const signed = (timestamp: string, body: string, key = privateKey) =>
  sign(null, Buffer.from(`${timestamp}|${body}`), key).toString('base64');

describe('telnyx-signature-ed25519', () => {
  it('accepts the base64 ed25519 signature of `timestamp|body` by the account key', () => {
    const signature = signed(TIMESTAMP, BODY);
    expect(isValidTelnyxSignature(PUBLIC_KEY, { rawBody: BODY, signature, timestamp: TIMESTAMP }, NOW_MS)).toBe(true);
  });

  it('refuses a changed body, a changed timestamp, another key and missing headers', () => {
    const signature = signed(TIMESTAMP, BODY);
    const other = generateKeyPairSync('ed25519').privateKey;
    const check = (webhook: { rawBody: string; signature: string | undefined; timestamp: string | undefined }) =>
      isValidTelnyxSignature(PUBLIC_KEY, webhook, NOW_MS);
    expect(check({ rawBody: `${BODY}&x=1`, signature, timestamp: TIMESTAMP })).toBe(false);
    expect(check({ rawBody: BODY, signature, timestamp: String(NOW_MS / 1000 + 1) })).toBe(false);
    expect(check({ rawBody: BODY, signature: signed(TIMESTAMP, BODY, other), timestamp: TIMESTAMP })).toBe(false);
    expect(check({ rawBody: BODY, signature: undefined, timestamp: TIMESTAMP })).toBe(false);
    expect(check({ rawBody: BODY, signature, timestamp: undefined })).toBe(false);
    expect(check({ rawBody: BODY, signature: 'bm90IGEgc2lnbmF0dXJl', timestamp: TIMESTAMP })).toBe(false);
  });

  it('refuses a signature more than five minutes from the clock, either way, so a captured webhook cannot be replayed', () => {
    for (const offsetS of [-301, 301]) {
      const timestamp = String(NOW_MS / 1000 + offsetS);
      const webhook = { rawBody: BODY, signature: signed(timestamp, BODY), timestamp };
      expect(isValidTelnyxSignature(PUBLIC_KEY, webhook, NOW_MS)).toBe(false);
    }
    const timestamp = String(NOW_MS / 1000 - 299);
    expect(
      isValidTelnyxSignature(PUBLIC_KEY, { rawBody: BODY, signature: signed(timestamp, BODY), timestamp }, NOW_MS),
    ).toBe(true);
  });

  it('reads only a base64 32-byte key as a public key', () => {
    expect(telnyxPublicKey(PUBLIC_KEY)).toBeDefined();
    expect(telnyxPublicKey(Buffer.alloc(31).toString('base64'))).toBeUndefined();
    expect(
      isValidTelnyxSignature(
        'AAAA',
        { rawBody: BODY, signature: signed(TIMESTAMP, BODY), timestamp: TIMESTAMP },
        NOW_MS,
      ),
    ).toBe(false);
  });
});
