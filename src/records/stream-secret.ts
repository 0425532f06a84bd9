// Each call gets a secret that only the party we told (the carrier, or the browser through
// its token) can present when it opens the media stream; the store keeps its hash only.
import { createHash, timingSafeEqual } from 'node:crypto';

export function hashStreamSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function streamSecretMatches(secret: string, storedHash: string | null): boolean {
  if (!storedHash) return false;
  const presented = Buffer.from(hashStreamSecret(secret), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}
