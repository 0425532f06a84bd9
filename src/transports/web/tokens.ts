// Single-use, short-lived tokens that let a browser open the media socket of one web call
// without ever holding an API key. They are kept in the store (only their hash), so the socket
// may reach any node; the node that issued a token ends its call if it is never redeemed.
import { createHash } from 'node:crypto';
import type { WebCallTokenRepository } from '../../records/web-tokens.ts';
import type { TimerHandle, Timers } from '../../timers.ts';

export const WEB_TOKEN_TTL_MS = 60_000;

export class WebCallTokens {
  private readonly expiries = new Map<string, TimerHandle>();

  constructor(
    private readonly repo: WebCallTokenRepository,
    private readonly timers: Timers,
    /** A token that expires unused: the call never connected. */
    private readonly onExpired: (claim: { orgId: string; callId: string }) => unknown,
  ) {}

  async issue(token: string, orgId: string, callId: string): Promise<void> {
    const key = digest(token);
    await this.repo.issue(key, orgId, callId, this.timers.now() + WEB_TOKEN_TTL_MS);
    const timer = this.timers.setTimeout(() => {
      this.expiries.delete(key);
      // Still there: no node redeemed it in time.
      void this.repo.take(key).then((claim) => {
        if (claim) return this.onExpired(claim);
      });
    }, WEB_TOKEN_TTL_MS);
    this.expiries.set(key, timer);
  }

  /** Shutdown: no expiry timer may touch the store once it is closed (recovery ends calls never opened). */
  close(): void {
    for (const timer of this.expiries.values()) this.timers.clearTimeout(timer);
    this.expiries.clear();
  }

  /** The call this token opens, once; undefined for an unknown, used or expired token. */
  async redeem(token: string): Promise<{ orgId: string; callId: string } | undefined> {
    const key = digest(token);
    const claim = await this.repo.take(key);
    this.timers.clearTimeout(this.expiries.get(key));
    this.expiries.delete(key);
    if (!claim) return undefined;
    if (claim.expiresAt < this.timers.now()) {
      // Redeemed late, before its timer ran: the call never connected all the same (and frees its slot).
      await this.onExpired(claim);
      return undefined;
    }
    return { orgId: claim.orgId, callId: claim.callId };
  }
}

const digest = (token: string) => createHash('sha256').update(token).digest('hex');
