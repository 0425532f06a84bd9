// Campaigns, batches and their tasks on PostgreSQL. A claim and a task's finish lock the
// campaign's row, so schedulers on every node take turns on one campaign: never two claims of one
// task, never more calls than its concurrency, and the last task to finish ends it exactly once.
import {
  FINISHED_STATUSES,
  type ActiveTask,
  type CampaignKind,
  type CampaignListQuery,
  type CampaignPage,
  type CampaignRepository,
  type CampaignRow,
  type CancelResult,
  type ClaimedTask,
  type NewTask,
} from '../../campaigns/repository.ts';
import {
  CAMPAIGN_SELECT,
  campaignListPage,
  claimedTask,
  toCampaignRow,
  type PendingTaskRow,
  type RawCampaign,
} from '../campaigns.ts';
import { keysetPageAsync } from '../paging.ts';
import type { PgDb, Queryable } from './db.ts';

type TaskRow = { campaign_id: string; seq: number; call_id: string | null };
const toTask = (r: TaskRow): ActiveTask => ({ campaignId: r.campaign_id, seq: r.seq, callId: r.call_id });

export class PgCampaignRepository implements CampaignRepository {
  constructor(
    private readonly db: PgDb,
    /** Runs inside the transaction that gives a campaign its final status (the webhook outbox writes there). */
    private readonly onEnded: (tx: Queryable, campaign: CampaignRow, callIds: string[]) => Promise<void>,
  ) {}

  insert(
    campaign: Omit<CampaignRow, 'completedCalls' | 'failedCalls' | 'activeCalls' | 'finishedAt'>,
    tasks: NewTask[],
  ): Promise<void> {
    return this.db.transaction(async (tx) => {
      await tx.run(
        `INSERT INTO campaigns (id, org_id, kind, name, status, agent_id, agent_version, from_number, presentation_number, concurrency, total_calls, created_at, scheduled_at, start_ts)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [
          campaign.id,
          campaign.orgId,
          campaign.kind,
          campaign.name,
          campaign.status,
          campaign.agentId,
          campaign.agentVersion,
          campaign.fromNumber,
          campaign.presentationNumber,
          campaign.concurrency,
          campaign.totalCalls,
          campaign.createdAt,
          campaign.scheduledAt,
          campaign.scheduledAt ?? campaign.createdAt,
        ],
      );
      // In chunks of rows per statement: up to MAX_TASKS tasks in a few round trips.
      for (let from = 0; from < tasks.length; from += 500) {
        const chunk = tasks.slice(from, from + 500);
        await tx.run(
          `INSERT INTO campaign_tasks (campaign_id, seq, call_to, presentation_number, metadata, dynamic_variables, state) VALUES ${chunk.map(() => "(?, ?, ?, ?, ?, ?, 'pending')").join(', ')}`,
          chunk.flatMap((task, i) => [
            campaign.id,
            from + i,
            task.callTo,
            task.presentationNumber,
            JSON.stringify(task.metadata),
            JSON.stringify(task.dynamicVariables),
          ]),
        );
      }
    });
  }

  async get(orgId: string, kind: CampaignKind, id: string): Promise<CampaignRow | undefined> {
    const raw = await this.db.row<RawCampaign>(`${CAMPAIGN_SELECT} WHERE c.org_id = ? AND c.kind = ? AND c.id = ?`, [
      orgId,
      kind,
      id,
    ]);
    return raw ? toCampaignRow(raw) : undefined;
  }

  private async byId(q: Queryable, id: string): Promise<CampaignRow | undefined> {
    const raw = await q.row<RawCampaign>(`${CAMPAIGN_SELECT} WHERE c.id = ?`, [id]);
    return raw ? toCampaignRow(raw) : undefined;
  }

  /**
   * Locks the campaign's row until the transaction ends, then reads it in a statement of its own:
   * its count of active tasks is then as of after the previous holder of the lock committed.
   */
  private async lockedById(tx: Queryable, id: string): Promise<CampaignRow | undefined> {
    await tx.row('SELECT id FROM campaigns WHERE id = ? FOR UPDATE', [id]);
    return this.byId(tx, id);
  }

  callIds(campaignId: string): Promise<string[]> {
    return this.callIdsOn(this.db, campaignId);
  }

  private async callIdsOn(q: Queryable, campaignId: string): Promise<string[]> {
    return (
      await q.rows<{ call_id: string }>(
        'SELECT call_id FROM campaign_tasks WHERE campaign_id = ? AND call_id IS NOT NULL ORDER BY seq',
        [campaignId],
      )
    ).map((r) => r.call_id);
  }

  async list(orgId: string, query: CampaignListQuery): Promise<CampaignPage> {
    const options = campaignListPage(orgId, query);
    const total = await this.db.row<{ n: number }>(
      `SELECT count(*) AS n FROM campaigns c WHERE ${options.where}`,
      options.params,
    );
    const page = await keysetPageAsync({
      ...options,
      fetch: (where, all, order, limit) =>
        this.db.rows<RawCampaign>(`${CAMPAIGN_SELECT} WHERE ${where} ${order} LIMIT ?`, [...all, limit]),
    });
    return { campaigns: page.rows.map(toCampaignRow), nextCursor: page.nextCursor, totalCount: total?.n ?? 0 };
  }

  cancel(orgId: string, kind: CampaignKind, id: string, now: number): Promise<CancelResult> {
    return this.db.transaction(async (tx): Promise<CancelResult> => {
      const current = await this.lockedById(tx, id);
      if (!current || current.orgId !== orgId || current.kind !== kind) return { ok: false, campaign: undefined };
      if (FINISHED_STATUSES.includes(current.status)) return { ok: false, campaign: current };
      await tx.run("UPDATE campaigns SET status = 'canceled', finished_at = ? WHERE id = ?", [now, id]);
      await tx.run("UPDATE campaign_tasks SET state = 'canceled' WHERE campaign_id = ? AND state = 'pending'", [id]);
      const canceled = (await this.byId(tx, id))!;
      await this.onEnded(tx, canceled, await this.callIdsOn(tx, id));
      return { ok: true, campaign: canceled };
    });
  }

  promoteDue(now: number): Promise<number> {
    return this.db.run("UPDATE campaigns SET status = 'pending' WHERE status = 'draft' AND scheduled_at <= ?", [now]);
  }

  async runnable(): Promise<{ id: string; orgId: string }[]> {
    const rows = await this.db.rows<{ id: string; org_id: string }>(
      `SELECT c.id, c.org_id FROM campaigns c WHERE c.status IN ('pending', 'ongoing')
       AND EXISTS (SELECT 1 FROM campaign_tasks t WHERE t.campaign_id = c.id AND t.state = 'pending')
       ORDER BY c.created_at, c.id`,
    );
    return rows.map((r) => ({ id: r.id, orgId: r.org_id }));
  }

  claim(
    campaignId: string,
    instanceId: string,
    callId: string,
  ): Promise<{ task: ClaimedTask; campaign: CampaignRow } | undefined> {
    return this.db.transaction(async (tx) => {
      const campaign = await this.lockedById(tx, campaignId);
      if (!campaign || (campaign.status !== 'pending' && campaign.status !== 'ongoing')) return undefined;
      if (campaign.activeCalls >= campaign.concurrency) return undefined;
      const raw = await tx.row<PendingTaskRow>(
        "SELECT seq, call_to, presentation_number, metadata, dynamic_variables FROM campaign_tasks WHERE campaign_id = ? AND state = 'pending' ORDER BY seq LIMIT 1",
        [campaignId],
      );
      if (!raw) return undefined;
      await tx.run(
        "UPDATE campaign_tasks SET state = 'active', call_id = ?, claimed_by = ? WHERE campaign_id = ? AND seq = ?",
        [callId, instanceId, campaignId, raw.seq],
      );
      if (campaign.status === 'pending')
        await tx.run("UPDATE campaigns SET status = 'ongoing' WHERE id = ?", [campaignId]);
      return { campaign: (await this.byId(tx, campaignId))!, task: claimedTask(campaignId, callId, raw) };
    });
  }

  async unclaim(callId: string): Promise<void> {
    await this.db.run(
      "UPDATE campaign_tasks SET state = 'pending', call_id = NULL, claimed_by = NULL WHERE call_id = ? AND state = 'active'",
      [callId],
    );
  }

  finishTask(callId: string, connected: boolean, reason: string | null, now: number): Promise<CampaignRow | undefined> {
    return this.db.transaction(async (tx) => {
      const task = await tx.row<{ campaign_id: string }>(
        "SELECT campaign_id FROM campaign_tasks WHERE call_id = ? AND state = 'active'",
        [callId],
      );
      if (!task) return undefined;
      // The campaign's row first: finishes of one campaign take turns, so the last one sees all the others.
      await tx.row('SELECT id FROM campaigns WHERE id = ? FOR UPDATE', [task.campaign_id]);
      const changed = await tx.run(
        "UPDATE campaign_tasks SET state = ?, reason = ? WHERE call_id = ? AND state = 'active'",
        [connected ? 'completed' : 'failed', reason, callId],
      );
      if (changed === 0) return undefined; // another node counted it while this one waited
      await tx.run(
        `UPDATE campaigns SET ${connected ? 'completed_calls = completed_calls + 1' : 'failed_calls = failed_calls + 1'} WHERE id = ?`,
        [task.campaign_id],
      );
      await this.finishIfDone(tx, task.campaign_id, now);
      return this.byId(tx, task.campaign_id);
    });
  }

  fail(campaignId: string, now: number): Promise<void> {
    return this.db.transaction(async (tx) => {
      const changed = await tx.run(
        "UPDATE campaigns SET status = 'fail', finished_at = ? WHERE id = ? AND status NOT IN ('success', 'fail', 'canceled')",
        [now, campaignId],
      );
      if (changed === 0) return;
      await tx.run("UPDATE campaign_tasks SET state = 'canceled' WHERE campaign_id = ? AND state = 'pending'", [
        campaignId,
      ]);
      await this.onEnded(tx, (await this.byId(tx, campaignId))!, await this.callIdsOn(tx, campaignId));
    });
  }

  private async finishIfDone(tx: Queryable, campaignId: string, now: number): Promise<void> {
    const left = await tx.row<{ n: number }>(
      "SELECT count(*) AS n FROM campaign_tasks WHERE campaign_id = ? AND state IN ('pending', 'active')",
      [campaignId],
    );
    if ((left?.n ?? 0) > 0) return;
    const ended = await tx.run(
      `UPDATE campaigns SET status = CASE WHEN completed_calls > 0 THEN 'success' ELSE 'fail' END, finished_at = ?
       WHERE id = ? AND status IN ('pending', 'ongoing')`,
      [now, campaignId],
    );
    if (ended > 0) await this.onEnded(tx, (await this.byId(tx, campaignId))!, await this.callIdsOn(tx, campaignId));
  }

  async heartbeat(instanceId: string, now: number): Promise<void> {
    await this.db.run(
      'INSERT INTO scheduler_leases (instance_id, heartbeat_at) VALUES (?, ?) ON CONFLICT (instance_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at',
      [instanceId, now],
    );
  }

  async dropLease(instanceId: string): Promise<void> {
    await this.db.run('DELETE FROM scheduler_leases WHERE instance_id = ?', [instanceId]);
  }

  async orphanedTasks(now: number, leaseMs: number, liveInstanceId: string): Promise<ActiveTask[]> {
    const rows = await this.db.rows<TaskRow>(
      `SELECT t.campaign_id, t.seq, t.call_id FROM campaign_tasks t
       LEFT JOIN scheduler_leases l ON l.instance_id = t.claimed_by
       WHERE t.state = 'active' AND t.claimed_by IS DISTINCT FROM ? AND (l.instance_id IS NULL OR l.heartbeat_at < ?)`,
      [liveInstanceId, now - leaseMs],
    );
    return rows.map(toTask);
  }

  async tasksOf(instanceId: string): Promise<ActiveTask[]> {
    return (
      await this.db.rows<TaskRow>(
        "SELECT campaign_id, seq, call_id FROM campaign_tasks WHERE state = 'active' AND claimed_by = ?",
        [instanceId],
      )
    ).map(toTask);
  }

  async expireLeases(now: number, leaseMs: number): Promise<void> {
    await this.db.run('DELETE FROM scheduler_leases WHERE heartbeat_at < ?', [now - leaseMs]);
  }
}
