// Creating, reading and listing calls. Placing the call is the dialer's job; whatever it
// answers, the record leaves `registered` (never a call that hangs there).
import type { AgentService, AgentVersionSpec } from '../agents/service.ts';
import { newId, type Clock, type RandomHex } from '../clock.ts';
import type { Dialer } from '../dialer/dialer.ts';
import { notFound } from '../errors.ts';
import type { Logger } from 'pino';
import type { CallListQuery, CallPage, CallRepository } from '../store/calls.ts';
import type { CallEvents } from './events.ts';
import { registeredRecord, type CallRecord } from './record.ts';
import { hashStreamSecret } from './stream-secret.ts';

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
  ) {}

  async createOutbound(orgId: string, request: OutboundCallRequest): Promise<CallRecord> {
    const agent = this.agents.resolve(orgId, request.agentId, request.agentVersion);
    const record = registeredRecord({
      call_id: request.callId ?? newId('call', this.random),
      agent_id: agent.agentId,
      agent_version: agent.version,
      call_type: 'outbound',
      call_from: request.from,
      call_to: request.to,
      presentation_number: request.presentationNumber,
      metadata: request.metadata,
      dynamic_variables: request.dynamicVariables,
      campaign_id: request.campaignId ?? null,
      batch_id: request.batchId ?? null,
    });
    const streamSecret = this.random(24);
    this.calls.insert(orgId, record, this.clock.now(), { streamSecretHash: hashStreamSecret(streamSecret) });
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
      if (result.status === 'failed') return this.endUnconnected(orgId, record.call_id, 'not_connected', result.reason, result.message);
      return record;
    } catch (error) {
      this.log.error({ err: error, call_id: record.call_id, dialer: this.dialer.name }, 'dialer failed');
      return this.endUnconnected(orgId, record.call_id, 'error', 'error_service', 'The service failed while placing the call.');
    }
  }

  get(orgId: string, callId: string): CallRecord {
    const record = this.calls.get(orgId, callId);
    if (!record) throw notFound('call', callId);
    return record;
  }

  list(orgId: string, query: CallListQuery): CallPage {
    return this.calls.list(orgId, query);
  }

  /**
   * Ends a call that never connected, reported later by the carrier (no answer, busy, voicemail).
   * Does nothing once the call connected or ended, so a late or repeated carrier report is harmless.
   */
  endIfRegistered(callId: string, status: 'not_connected' | 'error', reason: NonNullable<CallRecord['disconnection_reason']>, message: string): CallRecord | undefined {
    return this.finalizeIf(callId, ['registered'], status, reason, message);
  }

  /**
   * After a crash: a call that was registered or under way when its process died ends with
   * error_service (connected calls keep their start and are billed up to now).
   */
  endAbandoned(callId: string, message: string): CallRecord | undefined {
    return this.finalizeIf(callId, ['registered', 'ongoing'], 'error', 'error_service', message);
  }

  private finalizeIf(
    callId: string,
    from: CallRecord['call_status'][],
    status: 'not_connected' | 'error',
    reason: NonNullable<CallRecord['disconnection_reason']>,
    message: string,
  ): CallRecord | undefined {
    const found = this.calls.getForStream(callId);
    if (!found) return undefined;
    const now = this.clock.now();
    let changed = false;
    const ended = this.calls.update(found.orgId, callId, (current) => {
      if (!from.includes(current.call_status)) return current;
      changed = true;
      const connected = current.start_timestamp !== null;
      const durationMs = connected ? Math.max(0, now - current.start_timestamp!) : 0;
      return {
        ...current,
        call_status: connected ? 'error' : status,
        disconnection_reason: reason,
        disconnection_message: message,
        end_timestamp: now,
        duration_ms: durationMs,
        call_cost: current.call_cost ?? { total_credits_used: 0, duration_seconds: 0 },
      };
    });
    if (ended && changed) this.events.emit('ended', { orgId: found.orgId, record: ended });
    return ended;
  }

  private endUnconnected(
    orgId: string,
    callId: string,
    status: 'not_connected' | 'error',
    reason: NonNullable<CallRecord['disconnection_reason']>,
    message: string,
  ): CallRecord {
    const now = this.clock.now();
    const ended = this.calls.update(orgId, callId, (current) => ({
      ...current,
      call_status: status,
      disconnection_reason: reason,
      disconnection_message: message,
      end_timestamp: now,
      duration_ms: 0,
      call_cost: { total_credits_used: 0, duration_seconds: 0 },
    }));
    if (!ended) throw notFound('call', callId);
    this.events.emit('ended', { orgId, record: ended });
    return ended;
  }
}
