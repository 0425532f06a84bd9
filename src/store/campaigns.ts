// Campaigns and batches with their tasks. Every state change of the scheduler is one SQLite
// transaction here, so two processes on one database never claim the same task and a crash
// leaves nothing half-done.
import {
  FINISHED_STATUSES,
  type ActiveTask,
  type CampaignKind,
  type CampaignListQuery,
  type CampaignPage,
  type CampaignRow,
  type CampaignStatus,
  type CancelResult,
  type ClaimedTask,
  type NewTask,
} from '../campaigns/repository.ts';
import type { Db } from './database.ts';
import { keysetPage, ListWhere, queryFingerprint } from './paging.ts';

export interface RawCampaign {
  id: string;
  org_id: string;
  kind: CampaignKind;
  name: string;
  status: CampaignStatus;
  agent_id: string;
  agent_version: number;
  from_number: string;
  presentation_number: string | null;
  concurrency: number;
  total_calls: number;
  completed_calls: number;
  failed_calls: number;
  active: number;
  created_at: number;
  scheduled_at: number | null;
  finished_at: number | null;
}

export const CAMPAIGN_SELECT = `SELECT c.*, (SELECT count(*) FROM campaign_tasks t WHERE t.campaign_id = c.id AND t.state = 'active') AS active FROM campaigns c`;

export function toCampaignRow(r: RawCampaign): CampaignRow {
  return {
    id: r.id,
    orgId: r.org_id,
    kind: r.kind,
    name: r.name,
    status: r.status,
    agentId: r.agent_id,
    agentVersion: r.agent_version,
    fromNumber: r.from_number,
    presentationNumber: r.presentation_number,
    concurrency: r.concurrency,
    totalCalls: r.total_calls,
    completedCalls: r.completed_calls,
    failedCalls: r.failed_calls,
    activeCalls: r.active,
    createdAt: r.created_at,
    scheduledAt: r.scheduled_at,
    finishedAt: r.finished_at,
  };
}

/** A page of a campaign list as both stores fetch it: the WHERE, the keyset and the cursor. */
export function campaignListPage(orgId: string, query: CampaignListQuery) {
  const where = new ListWhere("c.org_id = ? AND c.kind = 'campaign'", orgId)
    .anyOf('c.status', query.filter.status)
    .anyOf('c.agent_id', query.filter.agent_id)
    .range('c.start_ts', query.filter.start_timestamp);
  return {
    where: where.sql,
    params: where.params,
    order: query.order,
    sortColumn: 'c.created_at',
    idColumn: 'c.id',
    limit: query.limit,
    paginationKey: query.paginationKey,
    fingerprint: queryFingerprint(['campaigns', query.filter, query.order]),
    cursorOf: (row: RawCampaign) => ({ sortKey: row.created_at, id: row.id }),
  };
}

/** A pending task's row as the task a scheduler claimed (both stores). */
export interface PendingTaskRow {
  seq: number;
  call_to: string;
  presentation_number: string | null;
  metadata: string;
  dynamic_variables: string;
}

export function claimedTask(campaignId: string, callId: string, raw: PendingTaskRow): ClaimedTask {
  return {
    campaignId,
    seq: raw.seq,
    callId,
    callTo: raw.call_to,
    presentationNumber: raw.presentation_number,
    metadata: JSON.parse(raw.metadata) as Record<string, unknown>,
    dynamicVariables: JSON.parse(raw.dynamic_variables) as Record<string, unknown>,
  };
}

export class SqliteCampaignRepository {
  /** `onEnded` runs inside the transaction that gives a campaign its final status (the webhook outbox writes there). */
  constructor(
    private readonly db: Db,
    private readonly onEnded: (campaign: CampaignRow) => void = () => undefined,
  ) {}

  insert(
    campaign: Omit<CampaignRow, 'completedCalls' | 'failedCalls' | 'activeCalls' | 'finishedAt'>,
    tasks: NewTask[],
  ): void {
    const insertCampaign = this.db.prepare(`
      INSERT INTO campaigns (id, org_id, kind, name, status, agent_id, agent_version, from_number, presentation_number,
        concurrency, total_calls, created_at, scheduled_at, start_ts)
      VALUES (@id, @orgId, @kind, @name, @status, @agentId, @agentVersion, @fromNumber, @presentationNumber,
        @concurrency, @totalCalls, @createdAt, @scheduledAt, @startTs)`);
    const insertTask = this.db.prepare(`
      INSERT INTO campaign_tasks (campaign_id, seq, call_to, presentation_number, metadata, dynamic_variables, state)
      VALUES (?, ?, ?, ?, ?, ?, 'pending')`);
    this.db
      .transaction(() => {
        insertCampaign.run({ ...campaign, startTs: campaign.scheduledAt ?? campaign.createdAt });
        tasks.forEach((task, seq) =>
          insertTask.run(
            campaign.id,
            seq,
            task.callTo,
            task.presentationNumber,
            JSON.stringify(task.metadata),
            JSON.stringify(task.dynamicVariables),
          ),
        );
      })
      .immediate();
  }

  get(orgId: string, kind: CampaignKind, id: string): CampaignRow | undefined {
    const raw = this.db
      .prepare(`${CAMPAIGN_SELECT} WHERE c.org_id = ? AND c.kind = ? AND c.id = ?`)
      .get(orgId, kind, id) as RawCampaign | undefined;
    return raw ? toCampaignRow(raw) : undefined;
  }

  private byId(id: string): CampaignRow | undefined {
    const raw = this.db.prepare(`${CAMPAIGN_SELECT} WHERE c.id = ?`).get(id) as RawCampaign | undefined;
    return raw ? toCampaignRow(raw) : undefined;
  }

  /** Call ids of the tasks dialed so far, in task order. */
  callIds(campaignId: string): string[] {
    return (
      this.db
        .prepare('SELECT call_id FROM campaign_tasks WHERE campaign_id = ? AND call_id IS NOT NULL ORDER BY seq')
        .all(campaignId) as {
        call_id: string;
      }[]
    ).map((r) => r.call_id);
  }

  list(orgId: string, query: CampaignListQuery): CampaignPage {
    const options = campaignListPage(orgId, query);
    const totalCount = (
      this.db.prepare(`SELECT count(*) AS n FROM campaigns c WHERE ${options.where}`).get(...options.params) as {
        n: number;
      }
    ).n;
    const page = keysetPage({
      ...options,
      fetch: (where, all, order, limit) =>
        this.db.prepare(`${CAMPAIGN_SELECT} WHERE ${where} ${order} LIMIT ?`).all(...all, limit) as RawCampaign[],
    });
    return { campaigns: page.rows.map(toCampaignRow), nextCursor: page.nextCursor, totalCount };
  }

  /** No new calls start; calls under way finish and still count. */
  cancel(orgId: string, kind: CampaignKind, id: string, now: number): CancelResult {
    return this.db
      .transaction((): CancelResult => {
        const current = this.get(orgId, kind, id);
        if (!current || FINISHED_STATUSES.includes(current.status)) return { ok: false, campaign: current };
        this.db.prepare("UPDATE campaigns SET status = 'canceled', finished_at = ? WHERE id = ?").run(now, id);
        this.db
          .prepare("UPDATE campaign_tasks SET state = 'canceled' WHERE campaign_id = ? AND state = 'pending'")
          .run(id);
        const canceled = this.byId(id)!;
        this.onEnded(canceled);
        return { ok: true, campaign: canceled };
      })
      .immediate();
  }

  /** draft → pending for every campaign whose scheduled_at has come. */
  promoteDue(now: number): number {
    return this.db
      .prepare("UPDATE campaigns SET status = 'pending' WHERE status = 'draft' AND scheduled_at <= ?")
      .run(now).changes;
  }

  /** Campaigns that may have a task to dial now (checked again, atomically, by claim). */
  runnable(): { id: string; orgId: string }[] {
    return (
      this.db
        .prepare(
          `SELECT c.id, c.org_id FROM campaigns c WHERE c.status IN ('pending', 'ongoing')
           AND EXISTS (SELECT 1 FROM campaign_tasks t WHERE t.campaign_id = c.id AND t.state = 'pending')
           ORDER BY c.created_at, c.id`,
        )
        .all() as { id: string; org_id: string }[]
    ).map((r) => ({ id: r.id, orgId: r.org_id }));
  }

  /**
   * Claims the next pending task if the campaign runs and has a free slot; its call_id is fixed
   * here, before anything is dialed, so after a crash the task and its call find each other.
   */
  claim(
    campaignId: string,
    instanceId: string,
    callId: string,
  ): { task: ClaimedTask; campaign: CampaignRow } | undefined {
    return this.db
      .transaction(() => {
        const campaign = this.byId(campaignId);
        if (!campaign || (campaign.status !== 'pending' && campaign.status !== 'ongoing')) return undefined;
        if (campaign.activeCalls >= campaign.concurrency) return undefined;
        const raw = this.db
          .prepare(
            "SELECT seq, call_to, presentation_number, metadata, dynamic_variables FROM campaign_tasks WHERE campaign_id = ? AND state = 'pending' ORDER BY seq LIMIT 1",
          )
          .get(campaignId) as PendingTaskRow | undefined;
        if (!raw) return undefined;
        this.db
          .prepare(
            "UPDATE campaign_tasks SET state = 'active', call_id = ?, claimed_by = ? WHERE campaign_id = ? AND seq = ?",
          )
          .run(callId, instanceId, campaignId, raw.seq);
        if (campaign.status === 'pending')
          this.db.prepare("UPDATE campaigns SET status = 'ongoing' WHERE id = ?").run(campaignId);
        return { campaign: this.byId(campaignId)!, task: claimedTask(campaignId, callId, raw) };
      })
      .immediate();
  }

  unclaim(callId: string): void {
    this.db
      .prepare(
        "UPDATE campaign_tasks SET state = 'pending', call_id = NULL, claimed_by = NULL WHERE call_id = ? AND state = 'active'",
      )
      .run(callId);
  }

  /**
   * Finishes the active task of this call (once: a repeated report changes nothing), counts it,
   * and ends the campaign when it was the last one. Returns the campaign it belonged to.
   */
  finishTask(callId: string, connected: boolean, reason: string | null, now: number): CampaignRow | undefined {
    return this.db
      .transaction(() => {
        const task = this.db
          .prepare("SELECT campaign_id FROM campaign_tasks WHERE call_id = ? AND state = 'active'")
          .get(callId) as { campaign_id: string } | undefined;
        if (!task) return undefined;
        this.db
          .prepare('UPDATE campaign_tasks SET state = ?, reason = ? WHERE call_id = ?')
          .run(connected ? 'completed' : 'failed', reason, callId);
        this.db
          .prepare(
            `UPDATE campaigns SET ${connected ? 'completed_calls = completed_calls + 1' : 'failed_calls = failed_calls + 1'} WHERE id = ?`,
          )
          .run(task.campaign_id);
        this.finishIfDone(task.campaign_id, now);
        return this.byId(task.campaign_id);
      })
      .immediate();
  }

  /** The agent is gone: nothing more can be dialed (docs/contract.md: such a campaign goes to fail). */
  fail(campaignId: string, now: number): void {
    this.db
      .transaction(() => {
        const result = this.db
          .prepare(
            "UPDATE campaigns SET status = 'fail', finished_at = ? WHERE id = ? AND status NOT IN ('success', 'fail', 'canceled')",
          )
          .run(now, campaignId);
        if (result.changes === 0) return;
        this.db
          .prepare("UPDATE campaign_tasks SET state = 'canceled' WHERE campaign_id = ? AND state = 'pending'")
          .run(campaignId);
        this.onEnded(this.byId(campaignId)!);
      })
      .immediate();
  }

  private finishIfDone(campaignId: string, now: number): void {
    const left = this.db
      .prepare("SELECT count(*) AS n FROM campaign_tasks WHERE campaign_id = ? AND state IN ('pending', 'active')")
      .get(campaignId) as { n: number };
    if (left.n > 0) return;
    const ended = this.db
      .prepare(
        `UPDATE campaigns SET status = CASE WHEN completed_calls > 0 THEN 'success' ELSE 'fail' END, finished_at = ?
         WHERE id = ? AND status IN ('pending', 'ongoing')`,
      )
      .run(now, campaignId);
    if (ended.changes > 0) this.onEnded(this.byId(campaignId)!);
  }

  heartbeat(instanceId: string, now: number): void {
    this.db
      .prepare(
        'INSERT INTO scheduler_leases (instance_id, heartbeat_at) VALUES (?, ?) ON CONFLICT (instance_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at',
      )
      .run(instanceId, now);
  }

  dropLease(instanceId: string): void {
    this.db.prepare('DELETE FROM scheduler_leases WHERE instance_id = ?').run(instanceId);
  }

  /** Active tasks whose scheduler is gone: its lease expired or was never renewed after a crash. */
  orphanedTasks(now: number, leaseMs: number, liveInstanceId: string): ActiveTask[] {
    return (
      this.db
        .prepare(
          `SELECT t.campaign_id, t.seq, t.call_id FROM campaign_tasks t
           LEFT JOIN scheduler_leases l ON l.instance_id = t.claimed_by
           WHERE t.state = 'active' AND t.claimed_by IS NOT ? AND (l.instance_id IS NULL OR l.heartbeat_at < ?)`,
        )
        .all(liveInstanceId, now - leaseMs) as { campaign_id: string; seq: number; call_id: string | null }[]
    ).map((r) => ({ campaignId: r.campaign_id, seq: r.seq, callId: r.call_id }));
  }

  /** The active tasks this scheduler claimed (for a clean shutdown). */
  tasksOf(instanceId: string): ActiveTask[] {
    return (
      this.db
        .prepare("SELECT campaign_id, seq, call_id FROM campaign_tasks WHERE state = 'active' AND claimed_by = ?")
        .all(instanceId) as {
        campaign_id: string;
        seq: number;
        call_id: string | null;
      }[]
    ).map((r) => ({ campaignId: r.campaign_id, seq: r.seq, callId: r.call_id }));
  }

  /** Forgets schedulers that stopped heartbeating; their tasks then count as orphaned. */
  expireLeases(now: number, leaseMs: number): void {
    this.db.prepare('DELETE FROM scheduler_leases WHERE heartbeat_at < ?').run(now - leaseMs);
  }
}
