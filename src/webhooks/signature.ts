// x-signature: v=<unix_ms>,d=<hex>[,d=<hex>] where hex = HMAC-SHA256(secret, raw body + unix_ms)
// (docs/contract.md). After a rotation the previous secret signs too for a day, as a second d=, so a
// receiver can move to the new secret without missing a delivery.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-signature';
/** Receivers reject a timestamp further than this from their clock. */
export const SIGNATURE_TOLERANCE_MS = 5 * 60_000;

const digest = (secret: string, body: string, at: number) =>
  createHmac('sha256', secret)
    .update(body + String(at))
    .digest('hex');

export function signatureHeader(body: string, at: number, secrets: readonly string[]): string {
  return [`v=${at}`, ...secrets.map((secret) => `d=${digest(secret, body, at)}`)].join(',');
}

/** What a receiver does: the timestamp is recent and one d= matches the secret. */
export function verifySignature(body: string, header: string, secret: string, now: number): boolean {
  const parts = header.split(',').map((p) => p.trim());
  const at = Number(parts.find((p) => p.startsWith('v='))?.slice(2));
  if (!Number.isSafeInteger(at) || Math.abs(now - at) > SIGNATURE_TOLERANCE_MS) return false;
  const expected = Buffer.from(digest(secret, body, at), 'hex');
  return parts
    .filter((p) => p.startsWith('d='))
    .some((p) => {
      const given = Buffer.from(p.slice(2), 'hex');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}
