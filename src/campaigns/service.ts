// Creating, reading, listing and canceling campaigns and batches. The scheduler runs them.
import type { AgentService, AgentVersionSpec } from '../agents/service.ts';
import { newId, type Clock, type RandomHex } from '../clock.ts';
import { ApiError, notFound } from '../errors.ts';
import type { CampaignListQuery, CampaignRepository, CampaignRow, CampaignStatus, NewTask } from './repository.ts';

export interface CampaignRequest {
  name: string;
  agentId: string;
  agentVersion: AgentVersionSpec;
  from: string;
  presentationNumber: string | null;
  /** Epoch ms; undefined or past means "start now". */
  scheduledAt: number | null;
  concurrency: number;
  tasks: NewTask[];
}

export type BatchStatus = 'queued' | 'processing' | 'completed' | 'failed';

const BATCH_STATUS: Record<CampaignStatus, BatchStatus> = {
  draft: 'queued',
  pending: 'queued',
  ongoing: 'processing',
  success: 'completed',
  fail: 'failed',
  canceled: 'failed',
};

export interface CampaignView {
  id: string;
  name: string;
  status: CampaignStatus;
  agent_id: string;
  agent_version: number;
  from_number: string;
  presentation_number: string | null;
  total_calls: number;
  completed_calls: number;
  failed_calls: number;
  active_concurrency: number;
  concurrency: number;
  organization_id: string;
  created_at: string;
  scheduled_at: string | null;
  finished_at: string | null;
}

export interface BatchView {
  batch_id: string;
  name: string;
  status: BatchStatus;
  total_tasks: number;
  completed_calls: number;
  failed_calls: number;
  call_ids: string[];
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function campaignView(row: CampaignRow): CampaignView {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    agent_id: row.agentId,
    agent_version: row.agentVersion,
    from_number: row.fromNumber,
    presentation_number: row.presentationNumber,
    total_calls: row.totalCalls,
    completed_calls: row.completedCalls,
    failed_calls: row.failedCalls,
    active_concurrency: row.activeCalls,
    concurrency: row.concurrency,
    organization_id: row.orgId,
    created_at: iso(row.createdAt)!,
    scheduled_at: iso(row.scheduledAt),
    finished_at: iso(row.finishedAt),
  };
}

export function batchView(row: CampaignRow, callIds: string[]): BatchView {
  return {
    batch_id: row.id,
    name: row.name,
    status: BATCH_STATUS[row.status],
    total_tasks: row.totalCalls,
    completed_calls: row.completedCalls,
    failed_calls: row.failedCalls,
    call_ids: callIds,
  };
}

export class CampaignService {
  constructor(
    private readonly repo: CampaignRepository,
    private readonly agents: AgentService,
    private readonly clock: Clock,
    private readonly random: RandomHex,
    private readonly limits: { maxTasks: number; batchConcurrency: number },
    /** Called after a create or cancel, so the scheduler acts at once rather than at its next poll. */
    private readonly onChange: () => void,
    /**
     * Throws when the caller id may not be shown on the carrier that would place the call (CallService.checkCallerId).
     */
    private readonly checkCallerId: (
      orgId: string,
      to: string,
      from: string,
      presentationNumber: string | null,
    ) => Promise<void> = async () => undefined,
  ) {}

  async create(orgId: string, request: CampaignRequest): Promise<CampaignView> {
    return campaignView(await this.insert(orgId, 'campaign', request));
  }

  async createBatch(
    orgId: string,
    request: Omit<CampaignRequest, 'concurrency' | 'scheduledAt' | 'presentationNumber'>,
  ): Promise<{ batch_id: string; status: 'queued'; total_tasks: number; message: string }> {
    const row = await this.insert(orgId, 'batch', {
      ...request,
      presentationNumber: null,
      scheduledAt: null,
      concurrency: this.limits.batchConcurrency,
    });
    return {
      batch_id: row.id,
      status: 'queued',
      total_tasks: row.totalCalls,
      message: `${row.totalCalls} calls queued; read progress at GET /v1/batch-calls/${row.id}`,
    };
  }

  async get(orgId: string, id: string): Promise<CampaignView> {
    const row = await this.repo.get(orgId, 'campaign', id);
    if (!row) throw notFound('campaign', id);
    return campaignView(row);
  }

  async getBatch(orgId: string, id: string): Promise<BatchView> {
    const row = await this.repo.get(orgId, 'batch', id);
    if (!row) throw notFound('batch', id);
    return batchView(row, await this.repo.callIds(row.id));
  }

  async list(
    orgId: string,
    query: CampaignListQuery,
  ): Promise<{ campaigns: CampaignView[]; next_cursor: string | null; total_count: number }> {
    const page = await this.repo.list(orgId, query);
    return { campaigns: page.campaigns.map(campaignView), next_cursor: page.nextCursor, total_count: page.totalCount };
  }

  async cancel(orgId: string, id: string): Promise<CampaignView> {
    const result = await this.repo.cancel(orgId, 'campaign', id, this.clock.now());
    if (!result.campaign) throw notFound('campaign', id);
    if (!result.ok)
      throw new ApiError(
        'CONFLICT',
        `campaign ${JSON.stringify(id)} already finished with status ${result.campaign.status}`,
      );
    this.onChange();
    return campaignView(result.campaign);
  }

  private async insert(orgId: string, kind: 'campaign' | 'batch', request: CampaignRequest): Promise<CampaignRow> {
    if (request.tasks.length === 0) throw new ApiError('BAD_REQUEST', 'body.tasks: give at least one task');
    if (request.tasks.length > this.limits.maxTasks) {
      throw new ApiError(
        'BAD_REQUEST',
        `body.tasks: at most ${this.limits.maxTasks} tasks per ${kind}, got ${request.tasks.length}`,
      );
    }
    // Refused now, not task by task once it runs.
    for (const task of request.tasks)
      await this.checkCallerId(orgId, task.callTo, request.from, task.presentationNumber ?? request.presentationNumber);
    // Resolved once: every call of the campaign uses the same agent version.
    const agent = await this.agents.resolve(orgId, request.agentId, request.agentVersion);
    const now = this.clock.now();
    const scheduledAt = request.scheduledAt;
    const id = newId(kind === 'batch' ? 'batch' : 'campaign', this.random);
    await this.repo.insert(
      {
        id,
        orgId,
        kind,
        name: request.name,
        status: scheduledAt !== null && scheduledAt > now ? 'draft' : 'pending',
        agentId: agent.agentId,
        agentVersion: agent.version,
        fromNumber: request.from,
        presentationNumber: request.presentationNumber,
        concurrency: request.concurrency,
        totalCalls: request.tasks.length,
        createdAt: now,
        scheduledAt,
      },
      request.tasks,
    );
    this.onChange();
    return (await this.repo.get(orgId, kind, id))!;
  }
}
