// Per-organization limits (decisions.md): a maximum of concurrent calls, and an optional
// credit balance that each call's cost is debited from.
import type { OrgLimit } from '../config.ts';
import type { CallRegistry } from './registry.ts';

export interface CreditRepository {
  /** Sets the starting balance the first time an organization is seen; later starts keep what is left. */
  initialize(orgId: string, balance: number, at: number): void;
  /** undefined: the organization has no balance (unlimited). */
  balance(orgId: string): number | undefined;
  debit(orgId: string, credits: number, at: number): void;
}

export class OrgLimits {
  constructor(
    private readonly registry: CallRegistry,
    private readonly credits: CreditRepository,
    private readonly options: { maxConcurrentCalls: number; orgLimits: Record<string, OrgLimit>; pricePerMinute: number; now: () => number },
  ) {
    for (const [orgId, limit] of Object.entries(options.orgLimits)) {
      if (limit.credit_balance !== undefined) credits.initialize(orgId, limit.credit_balance, options.now());
    }
  }

  private maxCalls(orgId: string): number {
    return this.options.orgLimits[orgId]?.max_concurrent_calls ?? this.options.maxConcurrentCalls;
  }

  /** Why a new call of this organization may not start now, or null. */
  admission(orgId: string): 'concurrency_limit_reached' | 'insufficient_balance' | null {
    const max = this.maxCalls(orgId);
    if (max > 0 && this.registry.countFor(orgId) >= max) return 'concurrency_limit_reached';
    const balance = this.credits.balance(orgId);
    if (balance !== undefined && balance <= 0) return 'insufficient_balance';
    return null;
  }

  /** For a running call: ends it once its cost so far would exceed what the organization has left. */
  guard(orgId: string): ((connectedMs: number) => 'insufficient_balance' | null) | undefined {
    if (this.credits.balance(orgId) === undefined) return undefined;
    return (connectedMs) => {
      const balance = this.credits.balance(orgId) ?? Infinity;
      const spent = (Math.ceil(connectedMs / 1000) * this.options.pricePerMinute) / 60;
      return spent >= balance ? 'insufficient_balance' : null;
    };
  }

  debit(orgId: string, credits: number): void {
    if (credits > 0 && this.credits.balance(orgId) !== undefined) this.credits.debit(orgId, credits, this.options.now());
  }
}
