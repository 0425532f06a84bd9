// Campaigns and batches with their tasks, as the scheduler and the API see them; the store
// implements the repository (SQLite now, PostgreSQL for several nodes).

export const CAMPAIGN_STATUSES = ['draft', 'pending', 'ongoing', 'success', 'fail', 'canceled'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];
export const FINISHED_STATUSES: readonly CampaignStatus[] = ['success', 'fail', 'canceled'];
export type CampaignKind = 'campaign' | 'batch';

export interface CampaignRow {
  id: string;
  orgId: string;
  kind: CampaignKind;
  name: string;
  status: CampaignStatus;
  agentId: string;
  agentVersion: number;
  fromNumber: string;
  presentationNumber: string | null;
  concurrency: number;
  totalCalls: number;
  completedCalls: number;
  failedCalls: number;
  /** Tasks claimed and not yet finished: the calls under way now. */
  activeCalls: number;
  createdAt: number;
  scheduledAt: number | null;
  finishedAt: number | null;
}

export interface NewTask {
  callTo: string;
  presentationNumber: string | null;
  metadata: Record<string, unknown>;
  dynamicVariables: Record<string, unknown>;
}

export interface ClaimedTask extends NewTask {
  campaignId: string;
  seq: number;
  callId: string;
}

export interface CampaignFilter {
  status?: string[] | undefined;
  agent_id?: string[] | undefined;
  start_timestamp?: { lower_threshold?: number | undefined; upper_threshold?: number | undefined } | undefined;
}

export interface CampaignListQuery {
  filter: CampaignFilter;
  order: 'ascending' | 'descending';
  limit: number;
  paginationKey?: string | null | undefined;
}

export interface CampaignPage {
  campaigns: CampaignRow[];
  nextCursor: string | null;
  totalCount: number;
}

export type CancelResult = { ok: true; campaign: CampaignRow } | { ok: false; campaign: CampaignRow | undefined };

export interface ActiveTask {
  campaignId: string;
  seq: number;
  callId: string | null;
}

/** Every state change of the scheduler is one transaction, so two processes never claim the same task. */
export interface CampaignRepository {
  insert(
    campaign: Omit<CampaignRow, 'completedCalls' | 'failedCalls' | 'activeCalls' | 'finishedAt'>,
    tasks: NewTask[],
  ): Promise<void>;
  get(orgId: string, kind: CampaignKind, id: string): Promise<CampaignRow | undefined>;
  /** Call ids of the tasks dialed so far, in task order. */
  callIds(campaignId: string): Promise<string[]>;
  list(orgId: string, query: CampaignListQuery): Promise<CampaignPage>;
  /** No new calls start; calls under way finish and still count. */
  cancel(orgId: string, kind: CampaignKind, id: string, now: number): Promise<CancelResult>;
  /** draft → pending for every campaign whose scheduled_at has come. */
  promoteDue(now: number): Promise<number>;
  /** Campaigns that may have a task to dial now (checked again, atomically, by claim). */
  runnable(): Promise<{ id: string; orgId: string }[]>;
  /**
   * Claims the next pending task if the campaign runs and has a free slot; its call_id is fixed
   * here, before anything is dialed, so after a crash the task and its call find each other.
   */
  claim(
    campaignId: string,
    instanceId: string,
    callId: string,
  ): Promise<{ task: ClaimedTask; campaign: CampaignRow } | undefined>;
  /** The task's call was never written (no free slot after all): the task waits again, as if never claimed. */
  unclaim(callId: string): Promise<void>;
  /**
   * Finishes the active task of this call (once: a repeated report changes nothing), counts it,
   * and ends the campaign when it was the last one. Returns the campaign it belonged to.
   */
  finishTask(callId: string, connected: boolean, reason: string | null, now: number): Promise<CampaignRow | undefined>;
  /** The agent is gone: nothing more can be dialed (docs/contract.md: such a campaign goes to fail). */
  fail(campaignId: string, now: number): Promise<void>;
  heartbeat(instanceId: string, now: number): Promise<void>;
  dropLease(instanceId: string): Promise<void>;
  /** Active tasks whose scheduler is gone: its lease expired or was never renewed after a crash. */
  orphanedTasks(now: number, leaseMs: number, liveInstanceId: string): Promise<ActiveTask[]>;
  /** The active tasks this scheduler claimed (for a clean shutdown). */
  tasksOf(instanceId: string): Promise<ActiveTask[]>;
  /** Forgets schedulers that stopped heartbeating; their tasks then count as orphaned. */
  expireLeases(now: number, leaseMs: number): Promise<void>;
}
