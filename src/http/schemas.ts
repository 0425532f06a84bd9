// Request and response shapes of the HTTP API. Requests are strict: an unknown key is a 400,
// so a typo never silently widens a query (docs/contract.md).
import { z } from 'zod';
import { AgentConfigSchema, AgentPatchSchema, E164 } from '../agents/schema.ts';
import { AGENT_ID } from '../agents/file.ts';
import {
  CALL_STATUSES,
  CALL_TYPES,
  CallRecordSchema,
  DISCONNECTION_REASONS,
  USER_SENTIMENTS,
} from '../records/record.ts';

export const ErrorBodySchema = z.object({
  error: z.string().describe('short message'),
  details: z.string().describe('longer explanation naming every offending field'),
  code: z.string().describe('stable error code'),
});

const FreeMap = z.record(z.string(), z.unknown());

export const AgentVersionRequest = z
  .union([z.literal('production'), z.literal('latest'), z.string().regex(/^[1-9][0-9]*$/), z.int().positive()])
  .nullable()
  .optional()
  .describe('"production" (default), "latest" or a version number');

export const CreateCallBody = z.strictObject({
  call_from: E164,
  call_to: E164,
  agent_id: z.string().min(1),
  agent_version: AgentVersionRequest,
  metadata: FreeMap.optional(),
  dynamic_variables: FreeMap.optional(),
  presentation_number: E164.nullable().optional(),
});

export const CreateCallAck = z.object({
  call_id: z.string(),
  status: z.string(),
  call_from: z.string(),
  call_to: z.string(),
  metadata: FreeMap,
  dynamic_variables: FreeMap,
});

export const CallIdParams = z.strictObject({ call_id: z.string().min(1).max(200) });

export const SayBody = z.strictObject({
  text: z.string().trim().min(1).max(4000),
  interrupt: z
    .boolean()
    .default(false)
    .describe('true: cut what the agent is saying (and its reply under way) and speak at once'),
});
export const ContextBody = z.strictObject({
  content: z.string().trim().min(1).max(8000).describe('a note the model sees from its next turn'),
});
export const PatchCallBody = z.strictObject({ metadata: FreeMap });
export const ControlAck = z.object({ call_id: z.string(), accepted: z.enum(['end', 'say', 'context']) });

const Range = z.strictObject({
  lower_threshold: z.int().optional(),
  upper_threshold: z.int().optional(),
});

const stringList = z.array(z.string().max(200)).max(100);

const V1Filter = {
  agent_id: stringList.optional(),
  disconnection_reason: z.array(z.enum(DISCONNECTION_REASONS)).max(100).optional(),
  call_type: z.array(z.enum(CALL_TYPES)).max(100).optional(),
  user_sentiment: z.array(z.enum(USER_SENTIMENTS)).max(100).optional(),
  call_from: stringList.optional(),
  call_to: stringList.optional(),
  duration: Range.optional().describe('milliseconds, both bounds inclusive'),
  start_timestamp: Range.optional().describe('Unix epoch ms, both bounds inclusive'),
};

export const V1FilterCriteria = z.strictObject(V1Filter);

export const V2FilterCriteria = z.strictObject({
  ...V1Filter,
  duration_ms: Range.optional().describe('milliseconds, both bounds inclusive'),
  call_status: z.array(z.enum(CALL_STATUSES)).max(100).optional(),
  campaign_id: stringList.optional(),
  batch_id: stringList.optional(),
});

const SortOrder = z.enum(['ascending', 'descending']).default('descending');
const Limit = z.int().min(1).max(500).default(50);

export const ListCallsV2Body = z.strictObject({
  filter_criteria: V2FilterCriteria.optional(),
  sort_order: SortOrder,
  limit: Limit,
  pagination_key: z.string().max(1000).nullable().optional(),
});

export const ListCallsV1Body = z.strictObject({
  filter_criteria: V1FilterCriteria.optional(),
  sort_order: SortOrder,
  limit: Limit,
  pagination_key: z.string().max(1000).optional(),
});

export const ListCallsV2Response = z.object({
  calls: z.array(CallRecordSchema),
  next_cursor: z.string().nullable(),
  total_count: z.int(),
});

export const ListCallsV1Response = z.object({
  calls: z
    .array(z.record(z.string(), z.unknown()))
    .describe('call records whose transcript items carry role and content only'),
  next_pagination_key: z.string().optional().describe('absent on the last page'),
});

export const CreateAgentBody = AgentConfigSchema.extend({ agent_id: AGENT_ID.optional() });
export const PatchAgentBody = AgentPatchSchema;
export const AgentIdParams = z.strictObject({ agent_id: z.string().min(1).max(200) });
export const AgentVersionQuery = z.strictObject({
  version: z.union([z.literal('production'), z.literal('latest'), z.string().regex(/^[1-9][0-9]*$/)]).optional(),
});
export const ListAgentsBody = z.strictObject({});

export const AgentResponse = AgentConfigSchema.omit({}).extend({
  agent_id: z.string(),
  version: z.int(),
  is_published: z.boolean(),
  last_modified: z.int().describe('Unix epoch ms'),
});
export const ListAgentsResponse = z.object({ agents: z.array(AgentResponse) });
