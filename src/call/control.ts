// Live call control through the API: end, speak a line, add context for the model; and the
// record's own changes (metadata, deletion for data retention). Only the call's organization
// reaches its call; a call that is not under way answers 409.
import { rm } from 'node:fs/promises';
import { ApiError, notFound } from '../errors.ts';
import type { CallRecord } from '../records/record.ts';
import type { CallRepository } from '../records/repository.ts';
import type { CallListener } from './listeners.ts';
import type { ActiveCall, CallRegistry } from './registry.ts';

export const API_END_MESSAGE = 'The call was ended through the API.';

export class CallControl {
  constructor(
    private readonly d: { calls: CallRepository; registry: CallRegistry; recordingPath: (callId: string) => string },
  ) {}

  async end(orgId: string, callId: string): Promise<void> {
    (await this.live(orgId, callId)).requestEnd('agent_hangup', API_END_MESSAGE);
  }

  async say(orgId: string, callId: string, text: string, interrupt: boolean): Promise<void> {
    (await this.live(orgId, callId)).say(text, interrupt);
  }

  async addContext(orgId: string, callId: string, content: string): Promise<void> {
    (await this.live(orgId, callId)).addContext(content);
  }

  async listen(orgId: string, callId: string, listener: CallListener): Promise<() => void> {
    return (await this.live(orgId, callId)).listen(listener);
  }

  /** Replaces the record's metadata, at any state of the call. */
  async setMetadata(orgId: string, callId: string, metadata: Record<string, unknown>): Promise<CallRecord> {
    const updated = await this.d.calls.update(orgId, callId, (current) => ({ ...current, metadata }));
    if (!updated) throw notFound('call', callId);
    return updated;
  }

  /** Removes the record, its transcript and its recording; a call not yet over keeps all (409). */
  async delete(orgId: string, callId: string): Promise<void> {
    const record = await this.d.calls.get(orgId, callId);
    if (!record) throw notFound('call', callId);
    if (record.call_status === 'registered' || record.call_status === 'ongoing' || this.d.registry.get(callId)) {
      throw new ApiError(
        'CONFLICT',
        `call ${callId} is ${record.call_status}: end it first (POST /v2/calls/${callId}/end)`,
      );
    }
    await this.d.calls.delete(orgId, callId);
    await rm(this.d.recordingPath(callId), { force: true });
  }

  /** The running call, or why not: 404 for another organization's or an unknown id, 409 when not under way. */
  private async live(orgId: string, callId: string): Promise<ActiveCall> {
    const record = await this.d.calls.get(orgId, callId);
    if (!record) throw notFound('call', callId);
    const active = this.d.registry.get(callId);
    if (!active || active.orgId !== orgId || record.call_status !== 'ongoing') {
      throw new ApiError('CONFLICT', `call ${callId} is ${record.call_status}, not ongoing`);
    }
    return active;
  }
}
