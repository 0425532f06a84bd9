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
      call_id: newId('call', this.random),
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
