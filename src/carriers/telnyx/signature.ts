// Telnyx signs every webhook with the account's ed25519 key: `telnyx-signature-ed25519` is the
// base64 signature of `${telnyx-timestamp}|${raw body}`, `telnyx-timestamp` the Unix time in
// seconds it was sent; the account's public key (Mission Control → Keys & Credentials → Public Key)
// is the base64 of the raw 32-byte ed25519 key. A signature older or newer than the tolerance is
// refused too, so a captured webhook cannot be replayed later. Telnyx's SDK (rest.ts) verifies the
// same way and takes the key per call, but reads the wall clock itself with a fixed tolerance: kept
// here so the check runs on the service's injected clock (tests sign at any time they choose).
import { createPublicKey, verify, type KeyObject } from 'node:crypto';

/** DER prefix of an ed25519 SubjectPublicKeyInfo: node takes the raw key inside one. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export const TELNYX_SIGNATURE_DEFAULTS = {
  /** How far a webhook's timestamp may be from the service's clock. */
  toleranceS: 300,
} as const;

/** The account's public key as node holds it; undefined when the base64 is not a 32-byte key. */
export function telnyxPublicKey(base64: string): KeyObject | undefined {
  const raw = Buffer.from(base64, 'base64');
  if (raw.length !== 32) return undefined;
  try {
    return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
  } catch {
    return undefined;
  }
}

export interface SignedWebhook {
  rawBody: string;
  signature: string | undefined;
  timestamp: string | undefined;
}

/** Whether the webhook was signed by the key's account, at a time within the tolerance of `nowMs`. */
export function isValidTelnyxSignature(
  publicKeyBase64: string,
  webhook: SignedWebhook,
  nowMs: number,
  toleranceS: number = TELNYX_SIGNATURE_DEFAULTS.toleranceS,
): boolean {
  const { signature, timestamp, rawBody } = webhook;
  if (!signature || !timestamp || !/^\d{1,12}$/.test(timestamp)) return false;
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > toleranceS) return false;
  const key = telnyxPublicKey(publicKeyBase64);
  if (!key) return false;
  const sig = Buffer.from(signature, 'base64');
  if (sig.length !== 64) return false;
  return verify(null, Buffer.from(`${timestamp}|${rawBody}`, 'utf8'), key, sig);
}
