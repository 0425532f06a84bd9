// Per-organization limits (decisions.md): a maximum of concurrent calls, and an optional
// credit balance that each call's cost is debited from. A call takes one of its organization's
// slots when it is admitted (an outbound call as it is placed, a web or inbound call as it
// registers) and keeps it while it rings or waits for its stream and while it runs. Slots are
// held in the store, so the limit holds across every process sharing it; a call's slot is free
// again once its record is final, or once the node running it is dead (nodes.ts).
import type { OrgLimit } from '../config.ts';
import type { CallRepository } from '../calls/repository.ts';
import type { AdmissionRefusal, CallAdmission } from '../calls/service.ts';

export interface CreditRepository {
  /** Sets the starting balance the first time an organization is seen; later starts keep what is left. */
  initialize(orgId: string, balance: number, at: number): void;
  /** undefined: the organization has no balance (unlimited). */
  balance(orgId: string): number | undefined;
  debit(orgId: string, credits: number, at: number): void;
}

export interface OrgLimitsDeps {
  credits: CreditRepository;
  /** Where slots are held. */
  calls: Pick<CallRepository, 'takeSlot' | 'slotsInUse' | 'holdsSlot'>;
  /** The nodes whose calls count (this one among them). */
  liveNodes: () => string[];
}

export class OrgLimits implements CallAdmission {
  private readonly credits: CreditRepository;
  private readonly calls: OrgLimitsDeps['calls'];
  private readonly liveNodes: () => string[];

  constructor(
    deps: OrgLimitsDeps,
    private readonly options: { maxConcurrentCalls: number; orgLimits: Record<string, OrgLimit>; pricePerMinute: number; now: () => number },
  ) {
    this.credits = deps.credits;
    this.calls = deps.calls;
    this.liveNodes = deps.liveNodes;
    for (const [orgId, limit] of Object.entries(options.orgLimits)) {
      if (limit.credit_balance !== undefined) deps.credits.initialize(orgId, limit.credit_balance, options.now());
    }
  }

  private maxCalls(orgId: string): number {
    return this.options.orgLimits[orgId]?.max_concurrent_calls ?? this.options.maxConcurrentCalls;
  }

  /**
   * Why this call may not start now, or null: then it holds one of its organization's slots until
   * it ends. A call that holds one already (admitted at registration) is only checked for credits.
   */
  admit(orgId: string, callId: string): AdmissionRefusal | null {
    const balance = this.credits.balance(orgId);
    // A full organization is refused for that first, as it would be with credit left.
    if (balance !== undefined && balance <= 0) return this.calls.holdsSlot(orgId, callId) || this.hasFreeSlot(orgId) ? 'insufficient_balance' : 'concurrency_limit_reached';
    // Counted and taken in one transaction: two processes admitting at once cannot both take the last slot.
    const max = this.maxCalls(orgId);
    return this.calls.takeSlot(orgId, callId, max, max > 0 ? this.liveNodes() : []) ? null : 'concurrency_limit_reached';
  }

  /** Whether one more call of the organization would fit now. */
  hasFreeSlot(orgId: string): boolean {
    const max = this.maxCalls(orgId);
    return max <= 0 || this.slotsInUse(orgId) < max;
  }

  /** Slots the organization's calls hold now, in every process sharing the store. */
  slotsInUse(orgId: string): number {
    return this.calls.slotsInUse(orgId, this.liveNodes());
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
