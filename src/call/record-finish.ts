// A call's record once its session has ended: the recording written, the cost debited, the record
// finalized, and the post-call analysis run in the background (idle() waits for it).
import type { Logger } from 'pino';
import type { AgentConfig } from '../agents/schema.ts';
import { analyzeCall } from '../analysis/analyze.ts';
import type { CallEvents } from '../records/events.ts';
import type { CallRecord } from '../records/record.ts';
import type { CallRepository } from '../records/repository.ts';
import { LLM_CLIENT_DEFAULTS } from '../llm/client.ts';
import type { LlmRequestMetadata } from '../llm/types.ts';
import type { OutboundHttp } from '../net/http.ts';
import { callCost } from './cost.ts';
import type { OrgLimits } from './limits.ts';
import type { TokenUsage } from './model/brain.ts';
import type { CallRecorder } from './recorder.ts';
import type { SessionResult } from './session.ts';

export interface RecordFinishDeps {
  calls: CallRepository;
  events: CallEvents;
  limits: OrgLimits;
  log: Logger;
  pricePerMinute: number;
  /** The analysis's model requests go through it. */
  outbound: OutboundHttp;
  /** Post-call analysis runs unless false. */
  analyze?: boolean | undefined;
  /** Where the API serves a call's recording. */
  recordingUrl(callId: string): string;
}

/** One ended call: who it was, what its session reported, and what is left to write. */
export interface EndedCall {
  orgId: string;
  callId: string;
  agent: AgentConfig;
  metadata: LlmRequestMetadata;
  result: SessionResult;
  recorder: CallRecorder | undefined;
  tokenUsage: TokenUsage | null;
}

export class RecordFinisher {
  private readonly background = new Set<Promise<unknown>>();

  constructor(private readonly d: RecordFinishDeps) {}

  async finish(call: EndedCall): Promise<void> {
    const { orgId, callId, result, recorder } = call;
    const durationMs = Math.max(0, result.endTimestamp - result.startTimestamp);
    const cost = callCost(durationMs, this.d.pricePerMinute);
    let recordingUrl: string | null = null;
    if (recorder) {
      try {
        // Block by block: a long call's WAV must not stall the other calls' audio.
        await recorder.close();
        recordingUrl = this.d.recordingUrl(callId);
      } catch (error) {
        this.d.log.error({ err: error, call_id: callId }, 'recording could not be written');
      }
    }
    const optOut = recorder === undefined;
    let changed = false;
    const ended = await this.d.calls.update(orgId, callId, (current) => {
      // A peer that took this node for dead may have finished the record already (records/nodes.ts): it stands.
      if (current.call_status !== 'ongoing' && current.call_status !== 'registered') return current;
      changed = true;
      return {
        ...current,
        call_status: result.reason === 'error_service' ? 'error' : 'ended',
        disconnection_reason: result.reason,
        disconnection_message: result.message,
        start_timestamp: result.startTimestamp,
        end_timestamp: result.endTimestamp,
        duration_ms: durationMs,
        transcript: optOut ? null : result.transcript,
        transcript_with_tool_calls: optOut ? null : result.transcriptWithToolCalls,
        recording_url: recordingUrl,
        call_cost: cost,
        latency: result.latency,
        llm_token_usage: call.tokenUsage,
        transfer_destination: result.transfer?.destination ?? null,
        transfer_timestamp: result.transfer?.at ?? null,
      };
    });
    if (!ended || !changed) return;
    await this.d.limits.debit(orgId, cost.total_credits_used);
    this.d.log.info({ call_id: callId, reason: result.reason, duration_ms: durationMs }, 'call ended');
    this.d.events.emit('ended', { orgId, record: ended });
    if (this.d.analyze !== false) this.track(this.analyze(call, ended));
  }

  /** Waits for post-call work (analysis) in flight. */
  async idle(): Promise<void> {
    while (this.background.size > 0) await Promise.all([...this.background]);
  }

  private async analyze(call: EndedCall, record: CallRecord): Promise<void> {
    const transcript = (record.transcript ?? []).map(({ role, content }) => ({ role, content }));
    const client = { dispatcher: this.d.outbound.dispatcher(LLM_CLIENT_DEFAULTS.connectTimeoutMs) };
    const analysis = await analyzeCall({
      agent: call.agent,
      transcript,
      metadata: call.metadata,
      logger: this.d.log,
      client,
    });
    await this.d.calls.update(call.orgId, call.callId, (current) => ({ ...current, call_analysis: analysis }));
  }

  private track(work: Promise<unknown>): void {
    const tracked = work
      .catch((error: unknown) => this.d.log.error({ err: error }, 'post-call work failed'))
      .finally(() => this.background.delete(tracked));
    this.background.add(tracked);
  }
}
