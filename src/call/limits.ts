// Per-organization limits (docs/contract.md): a maximum of concurrent calls, and an optional
// credit balance that each call's cost is debited from. A call takes one of its organization's
// slots when it is admitted (an outbound call as it is placed, a web or inbound call as it
// registers) and keeps it while it rings or waits for its stream and while it runs. Slots are
// held in the store, so the limit holds across every process sharing it; a call's slot is free
// again once its record is final, or once the node running it was taken for dead (the lease it was
// written under taken over, not only run out: records/nodes.ts). A stalled node that takes a new
// lease after that does not bring its old calls' slots back, since peers have admitted calls into them.
import type { OrgLimit } from '../config.ts';
import type { CallRepository } from '../records/repository.ts';
import type { AdmissionRefusal, CallAdmission } from '../records/service.ts';

export interface CreditRepository {
  /** Sets the starting balance the first time an organization is seen; later starts keep what is left. */
  initialize(orgId: string, balance: number, at: number): Promise<void>;
  /** undefined: the organization has no balance (unlimited). */
  balance(orgId: string): Promise<number | undefined>;
  debit(orgId: string, credits: number, at: number): Promise<void>;
}

export interface OrgLimitsDeps {
  credits: CreditRepository;
  /** Where slots are held. */
  calls: Pick<CallRepository, 'takeSlot' | 'slotsInUse' | 'holdsSlot'>;
}

export class OrgLimits implements CallAdmission {
  private readonly credits: CreditRepository;
  private readonly calls: OrgLimitsDeps['calls'];

  constructor(
    deps: OrgLimitsDeps,
    private readonly options: {
      maxConcurrentCalls: number;
      orgLimits: Record<string, OrgLimit>;
      pricePerMinute: number;
      now: () => number;
    },
  ) {
    this.credits = deps.credits;
    this.calls = deps.calls;
  }

  /** At start: the balances ORG_LIMITS names, for organizations the store has none of yet. */
  async initialize(): Promise<void> {
    for (const [orgId, limit] of Object.entries(this.options.orgLimits)) {
      if (limit.credit_balance !== undefined)
        await this.credits.initialize(orgId, limit.credit_balance, this.options.now());
    }
  }

  /** The most calls the organization may have at once (0: no limit). */
  maxCalls(orgId: string): number {
    return this.options.orgLimits[orgId]?.max_concurrent_calls ?? this.options.maxConcurrentCalls;
  }

  /**
   * Why this call may not start now, or null: then it holds one of its organization's slots until
   * it ends. A call that holds one already (admitted at registration) is only checked for credits.
   */
  async admit(orgId: string, callId: string, owner?: string): Promise<AdmissionRefusal | null> {
    const balance = await this.credits.balance(orgId);
    // A full organization is refused for that first, as it would be with credit left.
    if (balance !== undefined && balance <= 0) {
      return (await this.calls.holdsSlot(orgId, callId)) || (await this.hasFreeSlot(orgId))
        ? 'insufficient_balance'
        : 'concurrency_limit_reached';
    }
    // Counted and taken in one transaction: two processes admitting at once cannot both take the last slot.
    const taken = await this.calls.takeSlot(orgId, callId, this.maxCalls(orgId), owner);
    return taken ? null : 'concurrency_limit_reached';
  }

  /** Whether one more call of the organization would fit now. */
  async hasFreeSlot(orgId: string): Promise<boolean> {
    const max = this.maxCalls(orgId);
    return max <= 0 || (await this.slotsInUse(orgId)) < max;
  }

  /** Slots the organization's calls hold now, in every process sharing the store. */
  async slotsInUse(orgId: string): Promise<number> {
    return this.calls.slotsInUse(orgId);
  }

  /** For a running call: ends it once its cost so far would exceed what the organization has left. */
  async guard(orgId: string): Promise<((connectedMs: number) => Promise<'insufficient_balance' | null>) | undefined> {
    if ((await this.credits.balance(orgId)) === undefined) return undefined;
    return async (connectedMs) => {
      const balance = (await this.credits.balance(orgId)) ?? Infinity;
      const spent = (Math.ceil(connectedMs / 1000) * this.options.pricePerMinute) / 60;
      return spent >= balance ? 'insufficient_balance' : null;
    };
  }

  async debit(orgId: string, credits: number): Promise<void> {
    if (credits > 0 && (await this.credits.balance(orgId)) !== undefined)
      await this.credits.debit(orgId, credits, this.options.now());
  }
}
