// Single-use, short-lived tokens that let a browser open the media socket of one web call
// without ever holding an API key.
import { createHash } from 'node:crypto';
import type { TimerHandle, Timers } from '../../timers.ts';

export const WEB_TOKEN_TTL_MS = 60_000;

interface Claim {
  orgId: string;
  callId: string;
  expiresAt: number;
  timer: TimerHandle;
}

export class WebCallTokens {
  private readonly claims = new Map<string, Claim>();

  constructor(
    private readonly timers: Timers,
    /** A token that expires unused: the call never connected. */
    private readonly onExpired: (claim: { orgId: string; callId: string }) => void,
  ) {}

  issue(token: string, orgId: string, callId: string): void {
    const key = digest(token);
    const timer = this.timers.setTimeout(() => {
      if (this.claims.get(key) !== claim) return;
      this.claims.delete(key);
      this.onExpired(claim);
    }, WEB_TOKEN_TTL_MS);
    const claim: Claim = { orgId, callId, expiresAt: this.timers.now() + WEB_TOKEN_TTL_MS, timer };
    this.claims.set(key, claim);
  }

  /** Shutdown: forget every unused token and its expiry timer. */
  close(): void {
    for (const claim of this.claims.values()) this.timers.clearTimeout(claim.timer);
    this.claims.clear();
  }

  /** The call this token opens, once; undefined for an unknown, used or expired token. */
  redeem(token: string): { orgId: string; callId: string } | undefined {
    const key = digest(token);
    const claim = this.claims.get(key);
    if (!claim) return undefined;
    this.claims.delete(key);
    this.timers.clearTimeout(claim.timer);
    if (claim.expiresAt < this.timers.now()) {
      // Redeemed late, before its timer ran: the call never connected all the same (and frees its slot).
      this.onExpired(claim);
      return undefined;
    }
    return { orgId: claim.orgId, callId: claim.callId };
  }
}

const digest = (token: string) => createHash('sha256').update(token).digest('hex');
