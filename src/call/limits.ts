// Per-organization limits (decisions.md): a maximum of concurrent calls, and an optional
// credit balance that each call's cost is debited from. A call takes one of its organization's
// slots when it is admitted (an outbound call as it is placed, a web or inbound call as it
// registers) and keeps it while it rings or waits for its stream and while it runs.
import type { OrgLimit } from '../config.ts';
import type { CallEvents } from '../calls/events.ts';
import type { CallRepository } from '../calls/repository.ts';
import type { AdmissionRefusal, CallAdmission } from '../calls/service.ts';
import type { CallRegistry } from './registry.ts';

export interface CreditRepository {
  /** Sets the starting balance the first time an organization is seen; later starts keep what is left. */
  initialize(orgId: string, balance: number, at: number): void;
  /** undefined: the organization has no balance (unlimited). */
  balance(orgId: string): number | undefined;
  debit(orgId: string, credits: number, at: number): void;
}

export interface OrgLimitsDeps {
  registry: CallRegistry;
  credits: CreditRepository;
  /** Every ending of a call that never connected is told here: its slot is freed. */
  events: CallEvents;
  /** The stored records: a waiting call whose record ended out of this process's sight frees its slot too. */
  calls: Pick<CallRepository, 'get'>;
}

export class OrgLimits implements CallAdmission {
  private readonly registry: CallRegistry;
  private readonly credits: CreditRepository;
  private readonly calls: Pick<CallRepository, 'get'>;

  constructor(
    deps: OrgLimitsDeps,
    private readonly options: { maxConcurrentCalls: number; orgLimits: Record<string, OrgLimit>; pricePerMinute: number; now: () => number },
  ) {
    this.registry = deps.registry;
    this.credits = deps.credits;
    this.calls = deps.calls;
    deps.events.on('ended', ({ record }) => this.registry.release(record.call_id));
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
    if (!this.registry.holdsSlot(callId) && !this.hasFreeSlot(orgId)) return 'concurrency_limit_reached';
    const balance = this.credits.balance(orgId);
    if (balance !== undefined && balance <= 0) return 'insufficient_balance';
    this.registry.hold(orgId, callId);
    return null;
  }

  /** Whether one more call of the organization would fit now. */
  hasFreeSlot(orgId: string): boolean {
    const max = this.maxCalls(orgId);
    if (max <= 0 || this.registry.countFor(orgId) < max) return true;
    // Only when full, so the store is read rarely: a waiting call whose record has ended (where this
    // process saw no ending, say another process ended it) holds nothing any more.
    for (const callId of this.registry.waitingFor(orgId)) {
      const status = this.calls.get(orgId, callId)?.call_status;
      if (status !== 'registered' && status !== 'ongoing') this.registry.release(callId);
    }
    return this.registry.countFor(orgId) < max;
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
