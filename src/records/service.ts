// Creating, reading and listing calls. Placing the call is the dialer's job; whatever it
// answers, the record leaves `registered` (never a call that hangs there).
import type { AgentVersion } from '../agents/schema.ts';
import type { AgentService, AgentVersionSpec } from '../agents/service.ts';
import { newId, type Clock, type RandomHex } from '../clock.ts';
import type { Dialer } from './dialer.ts';
import { ApiError, CodedError, notFound } from '../errors.ts';
import type { Logger } from 'pino';
import type { CallListQuery, CallPage, CallRepository } from './repository.ts';
import type { CallEvents } from './events.ts';
import { registeredRecord, type CallRecord, type DisconnectionReason } from './record.ts';
import { hashStreamSecret } from './stream-secret.ts';

type RegisteredFields = Omit<Parameters<typeof registeredRecord>[0], 'call_id' | 'agent_id' | 'agent_version'>;

export type AdmissionRefusal = keyof typeof ADMISSION_MESSAGES;

/** The organization limits as calls are admitted to them; OrgLimits (the call room) implements it. */
export interface CallAdmission {
  /**
   * Why this call may not start now, or null: then it holds one of its organization's slots until it
   * ends (an ended event frees it). A call that holds one already is checked only for its credits.
   * `owner`: the node that serves the call from now on (records/repository.ts's takeSlot).
   */
  admit(orgId: string, callId: string, owner?: string): Promise<AdmissionRefusal | null>;
  /** Whether one more call of the organization would fit now. */
  hasFreeSlot(orgId: string): Promise<boolean>;
  /** The most calls the organization may have at once, as slots are counted in the store (0: no limit). */
  maxCalls(orgId: string): number;
}

const ADMIT_ALL: CallAdmission = {
  admit: async () => null,
  hasFreeSlot: async () => true,
  maxCalls: () => 0,
};

export interface OutboundCallRequest {
  agentId: string;
  agentVersion: AgentVersionSpec;
  from: string;
  to: string;
  presentationNumber: string | null;
  metadata: Record<string, unknown>;
  dynamicVariables: Record<string, unknown>;
  campaignId?: string | null;
  batchId?: string | null;
  /** Fixed in advance by the campaign scheduler, which records it with the task it claims. */
  callId?: string;
  /**
   * A campaign's call waits for a free slot rather than fail: when the organization has none, no
   * record is written and NoFreeSlotError is thrown (the scheduler puts the task back).
   */
  waitForSlot?: boolean;
}

/** The organization had no free slot for a call that waits for one; nothing was written. */
export class NoFreeSlotError extends CodedError<'NO_FREE_SLOT'> {
  constructor(message: string) {
    super('NO_FREE_SLOT', message);
  }
}

export class CallService {
  constructor(
    private readonly calls: CallRepository,
    private readonly agents: AgentService,
    private readonly dialer: Dialer,
    private readonly clock: Clock,
    private readonly random: RandomHex,
    private readonly log: Logger,
    private readonly events: CallEvents,
    /** The organization limits (OrgLimits); without them every call is admitted. */
    private readonly admission: CallAdmission = ADMIT_ALL,
    /** This process among the nodes sharing the store (nodes.ts): it owns the calls it registers. */
    private readonly nodeId?: string,
  ) {}

  /**
   * Writes a registered web or inbound call and the hash of its media-stream secret; the secret goes
   * to whoever opens the stream. The call takes a free slot of its organization now, so it counts
   * while its stream is awaited; one that finds none is admitted or refused when its stream opens.
   */
  async register(
    orgId: string,
    agent: AgentVersion,
    fields: RegisteredFields,
    callId: string = newId('call', this.random),
  ): Promise<{ record: CallRecord; streamSecret: string }> {
    const registered = this.registeredCall(agent, fields, callId);
    await this.calls.insert(orgId, registered.record, this.clock.now(), this.storedWith(registered.streamSecret));
    await this.admission.admit(orgId, callId);
    return registered;
  }

  /**
   * Whether the organization could start one more call now (a campaign waits for a slot instead of failing its task).
   */
  hasFreeSlot(orgId: string): Promise<boolean> {
    return this.admission.hasFreeSlot(orgId);
  }

  private registeredCall(
    agent: AgentVersion,
    fields: RegisteredFields,
    callId: string,
  ): { record: CallRecord; streamSecret: string } {
    const record = registeredRecord({
      opt_out_sensitive_data_storage: agent.config.opt_out_sensitive_data_storage,
      ...fields,
      call_id: callId,
      agent_id: agent.agentId,
      agent_version: agent.version,
    });
    return { record, streamSecret: this.random(24) };
  }

  private storedWith(streamSecret: string): { streamSecretHash: string; ownerNode?: string } {
    return { streamSecretHash: hashStreamSecret(streamSecret), ...(this.nodeId ? { ownerNode: this.nodeId } : {}) };
  }

  async createOutbound(orgId: string, request: OutboundCallRequest): Promise<CallRecord> {
    return (await this.startOutbound(orgId, request)).placed;
  }

  /**
   * Writes and admits the call, then dials it: resolves once the call holds its slot (or was
   * refused), with `placed` settling when the dialer has answered. A scheduler that waits for this
   * before it looks for the next free slot sees the call it started last.
   */
  async startOutbound(
    orgId: string,
    request: OutboundCallRequest,
  ): Promise<{ callId: string; placed: Promise<CallRecord> }> {
    await this.checkCallerId(orgId, request.to, request.from, request.presentationNumber);
    const agent = await this.agents.resolve(orgId, request.agentId, request.agentVersion);
    const { record, streamSecret } = this.registeredCall(
      agent,
      {
        call_type: 'outbound',
        call_from: request.from,
        call_to: request.to,
        presentation_number: request.presentationNumber,
        metadata: request.metadata,
        dynamic_variables: request.dynamicVariables,
        campaign_id: request.campaignId ?? null,
        batch_id: request.batchId ?? null,
      },
      request.callId ?? newId('call', this.random),
    );
    if (request.waitForSlot) {
      // Written only together with a slot (one transaction), so a call that waits leaves no trace
      // when another process took the last slot since the scheduler looked.
      const written = await this.calls.insertHoldingSlot(
        orgId,
        record,
        this.clock.now(),
        this.storedWith(streamSecret),
        this.admission.maxCalls(orgId),
      );
      if (!written) throw new NoFreeSlotError(`organization ${orgId} has no free slot`);
    } else {
      await this.calls.insert(orgId, record, this.clock.now(), this.storedWith(streamSecret));
    }
    // Admitted, the call holds its slot from now on: while it rings it counts against the limit.
    const refused = await this.admission.admit(orgId, record.call_id);
    if (refused) {
      const ended = await this.endUnconnected(
        orgId,
        record.call_id,
        'not_connected',
        refused,
        ADMISSION_MESSAGES[refused],
      );
      return { callId: record.call_id, placed: Promise.resolve(ended ?? record) };
    }
    return { callId: record.call_id, placed: this.dial(orgId, record, request, agent, streamSecret) };
  }

  private async dial(
    orgId: string,
    record: CallRecord,
    request: OutboundCallRequest,
    agent: AgentVersion,
    streamSecret: string,
  ): Promise<CallRecord> {
    try {
      const result = await this.dialer.dial({
        orgId,
        callId: record.call_id,
        from: request.from,
        to: request.to,
        presentationNumber: request.presentationNumber,
        agent,
        streamSecret,
      });
      if (result.status === 'failed')
        return (
          (await this.endUnconnected(orgId, record.call_id, 'not_connected', result.reason, result.message)) ?? record
        );
      return (await this.calls.get(orgId, record.call_id)) ?? record;
    } catch (error) {
      this.log.error({ err: error, call_id: record.call_id, dialer: this.dialer.name }, 'dialer failed');
      return (
        (await this.endUnconnected(
          orgId,
          record.call_id,
          'error',
          'error_service',
          'The service failed while placing the call.',
        )) ?? record
      );
    }
  }

  /**
   * On a real phone network the callee sees the caller id: it must be a number the organization
   * holds, or any organization could call in another's name. Simulated phones and no carrier take anything.
   */
  async checkCallerId(orgId: string, to: string, from: string, presentationNumber: string | null): Promise<void> {
    // A number the dialer serves but cannot call from (a SIP trunk with no outbound side) is refused the same way.
    await this.dialer.checkFrom?.(orgId, from);
    if (!this.dialer.showsCallerId(to)) return;
    const named: [string, string | null][] = [
      ['call_from', from],
      ['presentation_number', presentationNumber],
    ];
    const foreign: [string, string | null][] = [];
    for (const [field, number] of named)
      if (number !== null && !(await this.agents.ownsNumber(orgId, number))) foreign.push([field, number]);
    if (foreign.length > 0) {
      throw new ApiError(
        'BAD_REQUEST',
        foreign
          .map(
            ([field, number]) =>
              `body.${field}: ${number} is not a number of this organization (list it in one of its agents' inbound_numbers)`,
          )
          .join('; '),
      );
    }
  }

  async get(orgId: string, callId: string): Promise<CallRecord> {
    const record = await this.calls.get(orgId, callId);
    if (!record) throw notFound('call', callId);
    return record;
  }

  list(orgId: string, query: CallListQuery): Promise<CallPage> {
    return this.calls.list(orgId, query);
  }

  /**
   * Ends a call that never connected (dial failures, limits, a stream that never came).
   * Only a call still `registered` changes; `ended` is emitted once, when it does. `takeover`: a
   * node other than its owner ends it, only once its owner's lease is gone (nodes.ts).
   */
  async endUnconnected(
    orgId: string,
    callId: string,
    status: 'not_connected' | 'error',
    reason: DisconnectionReason,
    message: string,
    options: { takeover?: boolean } = {},
  ): Promise<CallRecord | undefined> {
    const now = this.clock.now();
    let changed = false;
    const ended = await this.calls.update(
      orgId,
      callId,
      (current) => {
        if (current.call_status !== 'registered') return current;
        changed = true;
        return {
          ...current,
          call_status: status,
          disconnection_reason: reason,
          disconnection_message: message,
          end_timestamp: now,
          duration_ms: 0,
          call_cost: { total_credits_used: 0, duration_seconds: 0 },
        };
      },
      options,
    );
    if (ended && changed) this.events.emit('ended', { orgId, record: ended });
    return ended;
  }

  /** endUnconnected for a carrier report, which names the call_id only. A late or repeated report changes nothing. */
  async endIfRegistered(
    callId: string,
    status: 'not_connected' | 'error',
    reason: DisconnectionReason,
    message: string,
  ): Promise<CallRecord | undefined> {
    const found = await this.calls.getForStream(callId);
    return found ? this.endUnconnected(found.orgId, callId, status, reason, message) : undefined;
  }

  /**
   * A campaign call whose scheduler died: registered or under way, it ends with error_service
   * (a connected one keeps its start) — but only once the lease of the node that owns it is gone
   * (nodes.ts): a scheduler's lease running out says nothing of the node serving the call. Returns
   * the record as it stands, changed or not (still registered or ongoing: its owner is alive).
   */
  async endAbandoned(callId: string, message: string): Promise<CallRecord | undefined> {
    const found = await this.calls.getForStream(callId);
    if (!found) return undefined;
    const now = this.clock.now();
    let changed = false;
    const ended = await this.calls.update(
      found.orgId,
      callId,
      (current) => {
        if (current.call_status !== 'registered' && current.call_status !== 'ongoing') return current;
        changed = true;
        const connected = current.start_timestamp !== null;
        return {
          ...current,
          call_status: 'error',
          disconnection_reason: 'error_service',
          disconnection_message: message,
          end_timestamp: now,
          duration_ms: connected ? Math.max(0, now - current.start_timestamp!) : 0,
          call_cost: current.call_cost ?? { total_credits_used: 0, duration_seconds: 0 },
        };
      },
      { takeover: true },
    );
    if (ended && changed) this.events.emit('ended', { orgId: found.orgId, record: ended });
    return ended;
  }
}

export const ADMISSION_MESSAGES = {
  concurrency_limit_reached: 'The organization has reached its concurrent call limit.',
  insufficient_balance: 'The organization has no credits left.',
} as const;
