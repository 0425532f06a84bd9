// A bound on new INVITEs per source address (issue 37, "Safe on a public address"): a token
// bucket each, so a trunk's normal bursts pass and a flood from one address is answered 503 with
// Retry-After before anything is admitted, checked or allocated. The table of sources is bounded
// too: the least recently seen is forgotten first, so spoofed addresses cannot grow it.

export const INVITE_FLOOD_DEFAULTS = {
  /** INVITEs one source may send at once. */
  burst: 20,
  /** INVITEs a second one source may keep sending. */
  perSecond: 10,
  /** Sources remembered at most. */
  sources: 10_000,
} as const;

export interface InviteFloodLimits {
  burst: number;
  perSecond: number;
  sources: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class InviteFloodGuard {
  private readonly buckets = new Map<string, Bucket>();
  private readonly burst: number;
  private readonly perSecond: number;
  private readonly sources: number;

  constructor(
    private readonly clock: { now(): number },
    limits: Partial<InviteFloodLimits> = {},
  ) {
    this.burst = limits.burst ?? INVITE_FLOOD_DEFAULTS.burst;
    this.perSecond = limits.perSecond ?? INVITE_FLOOD_DEFAULTS.perSecond;
    this.sources = limits.sources ?? INVITE_FLOOD_DEFAULTS.sources;
  }

  /** Takes one INVITE of `address`'s allowance; false when it has none left (answer 503). */
  take(address: string): boolean {
    const now = this.clock.now();
    const last = this.buckets.get(address);
    const tokens = last ? Math.min(this.burst, last.tokens + ((now - last.at) / 1000) * this.perSecond) : this.burst;
    // Re-inserted so the map's order is least recently seen first.
    this.buckets.delete(address);
    if (this.buckets.size >= this.sources) this.buckets.delete(this.buckets.keys().next().value!);
    const allowed = tokens >= 1;
    this.buckets.set(address, { tokens: allowed ? tokens - 1 : tokens, at: now });
    return allowed;
  }

  /** Whole seconds until `address` may send one more INVITE (for Retry-After). */
  retryAfterSeconds(address: string): number {
    const bucket = this.buckets.get(address);
    if (!bucket || bucket.tokens >= 1) return 0;
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.perSecond));
  }

  get size(): number {
    return this.buckets.size;
  }
}
