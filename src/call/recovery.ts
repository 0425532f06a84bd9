// What a process that died left behind is put right, once: calls it was running end with
// error_service, charged for the time they ran, their recordings made readable and linked; calls
// still waiting to connect end as not_connected (a campaign's are its scheduler's, which ends them
// when their lease runs out). A process does it at start for the calls of its own previous run and
// of nodes whose lease ran out, and again whenever a peer's lease runs out (nodes.ts); a live
// peer's calls are never touched: `liveNodes` only narrows the search, and each call is written
// only once no lease of its owner's epoch exists, checked in the transaction that writes it
// (records/nodes.ts) — a lease that ran out is taken over (forgetExpired) before its calls are. At
// start, recordings of no call are removed.
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { CallEvents } from '../records/events.ts';
import type { CallRecord } from '../records/record.ts';
import type { CallRepository } from '../records/repository.ts';
import type { CallService } from '../records/service.ts';
import type { Clock } from '../clock.ts';
import { callCost } from './cost.ts';
import type { OrgLimits } from './limits.ts';
import { repairRecording } from './recorder.ts';

export interface RecoveryDeps {
  calls: CallRepository;
  service: CallService;
  events: CallEvents;
  limits: OrgLimits;
  clock: Clock;
  log: Logger;
  recordingsDir: string;
  recordingUrl: (callId: string) => string;
  pricePerMinute: number;
}

/** Finishes the calls no node in `liveNodes` owns; `atStart` also removes recordings of no call. */
export async function recoverOrphanedCalls(d: RecoveryDeps, liveNodes: string[], atStart: boolean): Promise<void> {
  for (const { orgId, record } of await d.calls.listOrphaned(['ongoing'], liveNodes))
    await finishInterrupted(d, orgId, record);
  for (const { orgId, record } of await d.calls.listOrphaned(['registered'], liveNodes)) {
    // A campaign's call is its scheduler's: the lease of the one that claimed it decides (a live peer may own it).
    if (record.campaign_id !== null || record.batch_id !== null) continue;
    // Its stream deadline, its ring timer or its dialer died with the process: it cannot connect now.
    const message = atStart
      ? 'The service restarted before the call connected.'
      : 'The service process the call was waiting on stopped before it connected.';
    await d.service.endUnconnected(orgId, record.call_id, 'not_connected', 'dial_failed', message, { takeover: true });
  }
  if (atStart) await removeOrphanRecordings(d);
}

/**
 * The call ran until about the last thing it left: its recording's last block (written every
 * second) or its last transcript item, never later than now.
 */
function lastSignOfLife(d: RecoveryDeps, record: CallRecord, startedAt: number, wav: string | null): number {
  let last = startedAt;
  for (const item of record.transcript_with_tool_calls ?? []) last = Math.max(last, startedAt + item.end_at * 1000);
  if (wav) {
    try {
      last = Math.max(last, statSync(wav).mtimeMs);
    } catch {
      // no recording after all
    }
  }
  return Math.min(Math.round(last), d.clock.now());
}

async function finishInterrupted(d: RecoveryDeps, orgId: string, record: CallRecord): Promise<void> {
  const path = join(d.recordingsDir, `${record.call_id}.wav`);
  const recorded = !record.opt_out_sensitive_data_storage && repairRecording(path);
  const startedAt = record.start_timestamp ?? d.clock.now();
  const endedAt = lastSignOfLife(d, record, startedAt, recorded ? path : null);
  const durationMs = Math.max(0, endedAt - startedAt);
  const cost = callCost(durationMs, d.pricePerMinute);
  let changed = false;
  const ended = await d.calls.update(
    orgId,
    record.call_id,
    (current) => {
      if (current.call_status !== 'ongoing') return current;
      changed = true;
      return {
        ...current,
        call_status: 'error',
        disconnection_reason: 'error_service',
        disconnection_message: 'The service stopped during the call.',
        end_timestamp: endedAt,
        duration_ms: durationMs,
        call_cost: cost,
        recording_url: recorded ? d.recordingUrl(record.call_id) : null,
      };
    },
    { takeover: true },
  );
  if (!ended || !changed) return;
  await d.limits.debit(orgId, cost.total_credits_used);
  d.events.emit('ended', { orgId, record: ended });
  d.log.warn(
    { call_id: record.call_id, duration_ms: durationMs },
    'call interrupted by a restart finalized with error_service',
  );
}

/** A recording with no call, or of a call that keeps nothing, is removed. */
async function removeOrphanRecordings(d: RecoveryDeps): Promise<void> {
  let files: string[];
  try {
    files = readdirSync(d.recordingsDir);
  } catch {
    return;
  }
  for (const file of files) {
    if (!file.endsWith('.wav')) continue;
    const found = await d.calls.getForStream(file.slice(0, -'.wav'.length));
    if (found && !found.record.opt_out_sensitive_data_storage) continue;
    rmSync(join(d.recordingsDir, file), { force: true });
    d.log.warn({ file }, 'recording of no call removed');
  }
}
