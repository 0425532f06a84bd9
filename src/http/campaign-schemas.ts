// Request and response shapes of the campaign and batch endpoints (interface 2.3, 2.4, 4.5–4.8;
// docs/contract.md, "Campaigns and batches"). Requests are strict: an unknown key is a 400.
import { z } from 'zod';
import { E164 } from '../agents/schema.ts';
import { CAMPAIGN_STATUSES } from '../campaigns/repository.ts';
import { AgentVersionRequest } from './schemas.ts';

const FreeMap = z.record(z.string(), z.unknown());

export const CampaignTask = z.strictObject({
  call_to: E164,
  dynamic_variables: FreeMap.optional(),
  metadata: FreeMap.optional(),
});

export const CreateCampaignBody = z.strictObject({
  name: z.string().min(1).max(200),
  call_from: E164,
  agent_id: z.string().min(1).max(200),
  tasks: z.array(CampaignTask),
  presentation_number: E164.nullable().optional(),
  agent_version: AgentVersionRequest,
  scheduled_at: z.iso
    .datetime({ offset: true })
    .nullable()
    .optional()
    .describe('ISO 8601 date-time; in the future the campaign stays draft until then'),
  concurrency: z.int().min(1).max(100).default(5),
});

export const CampaignResponse = z.object({
  id: z.string(),
  name: z.string(),
  status: z.enum(CAMPAIGN_STATUSES),
  agent_id: z.string(),
  agent_version: z.int().nullable(),
  from_number: z.string(),
  presentation_number: z.string().nullable(),
  total_calls: z.int(),
  completed_calls: z.int().describe('tasks whose call connected and then ended for any reason'),
  failed_calls: z.int().describe('tasks whose call never connected'),
  active_concurrency: z.int().describe('calls under way now; never above concurrency'),
  concurrency: z.int(),
  organization_id: z.string(),
  created_at: z.string().describe('ISO 8601 UTC'),
  scheduled_at: z.string().nullable(),
  finished_at: z.string().nullable(),
});

export const CampaignIdParams = z.strictObject({ campaign_id: z.string().min(1).max(200) });

export const ListCampaignsBody = z.strictObject({
  filter_criteria: z
    .strictObject({
      status: z.array(z.enum(CAMPAIGN_STATUSES)).max(100).optional(),
      agent_id: z.array(z.string().max(200)).max(100).optional(),
      start_timestamp: z
        .strictObject({ lower_threshold: z.int().optional(), upper_threshold: z.int().optional() })
        .optional()
        .describe('Unix epoch ms of the campaign start (scheduled_at, else created_at); both bounds inclusive'),
    })
    .optional(),
  sort_order: z.enum(['ascending', 'descending']).default('descending'),
  limit: z.int().min(1).max(500).default(50),
  pagination_key: z.string().max(1000).nullable().optional(),
});

export const ListCampaignsResponse = z.object({
  campaigns: z.array(CampaignResponse),
  next_cursor: z.string().nullable(),
  total_count: z.int(),
});

export const BatchTask = z.strictObject({
  call_to: E164,
  metadata: FreeMap.optional(),
  dynamic_variables: FreeMap.optional(),
  presentation_number: E164.nullable().optional(),
});

export const CreateBatchBody = z.strictObject({
  name: z.string().min(1).max(200),
  call_from: E164,
  agent_id: z.string().min(1).max(200),
  tasks: z.array(BatchTask),
  agent_version: AgentVersionRequest,
});

export const BatchAck = z.object({
  batch_id: z.string(),
  status: z.enum(['queued', 'processing', 'failed']),
  total_tasks: z.int(),
  message: z.string().optional(),
});

export const BatchIdParams = z.strictObject({ batch_id: z.string().min(1).max(200) });

export const BatchResponse = z.object({
  batch_id: z.string(),
  name: z.string(),
  status: z.enum(['queued', 'processing', 'completed', 'failed']),
  total_tasks: z.int(),
  completed_calls: z.int(),
  failed_calls: z.int(),
  call_ids: z.array(z.string()),
});
