// The call record (docs/contract.md) as stored and served.
import { z } from 'zod';
import type { LlmRequestMetadata } from '../llm/types.ts';

export const CALL_TYPES = ['web', 'phone', 'inbound', 'outbound', 'api', 'unknown'] as const;
export const CALL_STATUSES = ['registered', 'ongoing', 'ended', 'not_connected', 'error'] as const;
export const DISCONNECTION_REASONS = [
  'user_hangup',
  'agent_hangup',
  'dial_no_answer',
  'dial_failed',
  'voicemail_reached',
  'concurrency_limit_reached',
  'insufficient_balance',
  'error_service',
  'max_duration_reached',
  'inactivity',
  'flow_error',
  'call_transfer',
] as const;
export const USER_SENTIMENTS = ['positive', 'neutral', 'negative', 'unknown'] as const;

export type CallType = (typeof CALL_TYPES)[number];
export type DisconnectionReason = (typeof DISCONNECTION_REASONS)[number];

export const TranscriptMessageSchema = z.object({
  role: z.enum(['agent', 'user']),
  content: z.string(),
  start_at: z.number().describe('seconds from start_timestamp'),
  end_at: z.number().describe('seconds from start_timestamp'),
  input: z
    .literal('keypad')
    .optional()
    .describe('a caller turn keyed on the phone keypad (content: the digits), not spoken'),
});

export const ToolCallInvocationSchema = z.object({
  role: z.literal('tool_call_invocation'),
  tool_call_id: z.string(),
  name: z.string(),
  arguments: z.string().describe('the JSON text the model produced'),
  start_at: z.number(),
  end_at: z.number(),
});

export const ToolCallResultSchema = z.object({
  role: z.literal('tool_call_result'),
  tool_call_id: z.string(),
  content: z.string().describe('response body text, cut at 16 KiB'),
  successful: z.boolean(),
  start_at: z.number(),
  end_at: z.number(),
});

export const TranscriptItemSchema = z.union([TranscriptMessageSchema, ToolCallInvocationSchema, ToolCallResultSchema]);

export const LatencyStatsSchema = z.object({
  p50: z.number(),
  p90: z.number(),
  p95: z.number(),
  p99: z.number(),
  min: z.number(),
  max: z.number(),
  num: z.int(),
});

export const LATENCY_KEYS = ['e2e', 'asr', 'llm', 'llm_speakable', 'tts', 'tool'] as const;

const PROVIDER_KINDS = ['stt', 'voice', 'llm'] as const;
/** Why a call left a provider: it could not connect, missed its first-result deadline, or failed otherwise. */
const FALLBACK_REASONS = ['connect', 'timeout', 'error'] as const;

/** One provider a call used (docs/fallbacks.md): which turns it served, and its own stage latencies. */
const ProviderUseSchema = z.object({
  kind: z.enum(PROVIDER_KINDS),
  name: z.string().describe('stt and voice: the engine; llm: the model'),
  position: z
    .int()
    .describe("0: the agent's own; 1, 2, …: its fallback list in order; one past the list: the embedded last resort"),
  switched_at: z
    .number()
    .nullable()
    .describe("seconds from start_timestamp when the call moved to it; null for the agent's own"),
  reason: z.enum(FALLBACK_REASONS).nullable().describe('why the provider before it was left; null for the first'),
  first_turn: z
    .int()
    .nullable()
    .describe('the first caller turn it served (0: before the caller first spoke); null: none'),
  last_turn: z.int().nullable(),
  asr: LatencyStatsSchema.optional(),
  llm: LatencyStatsSchema.optional(),
  llm_speakable: LatencyStatsSchema.optional(),
  tts: LatencyStatsSchema.optional(),
});

/** The record's `latency`: each stage over the whole call, and the providers that served it. */
const CallLatencySchema = z.object({
  e2e: LatencyStatsSchema.optional(),
  asr: LatencyStatsSchema.optional(),
  llm: LatencyStatsSchema.optional(),
  llm_speakable: LatencyStatsSchema.optional(),
  tts: LatencyStatsSchema.optional(),
  tool: LatencyStatsSchema.optional(),
  providers: z
    .array(ProviderUseSchema)
    .optional()
    .describe('each recogniser, voice and model the call used, in the order it used them (docs/fallbacks.md)'),
});

export const CallRecordSchema = z.object({
  call_id: z.string(),
  agent_id: z.string(),
  agent_version: z.int().nullable(),
  call_type: z.enum(CALL_TYPES),
  call_status: z.enum(CALL_STATUSES),
  call_from: z.string().nullable(),
  call_to: z.string().nullable(),
  presentation_number: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()),
  dynamic_variables: z.record(z.string(), z.unknown()),
  disconnection_reason: z.enum(DISCONNECTION_REASONS).nullable(),
  disconnection_message: z
    .string()
    .nullable()
    .describe('readable explanation of how the call ended, when there is one'),
  start_timestamp: z.int().nullable().describe('Unix epoch ms when the conversation connected'),
  end_timestamp: z.int().nullable().describe('Unix epoch ms'),
  duration_ms: z.int().nullable(),
  transcript: z.array(TranscriptMessageSchema).nullable(),
  transcript_with_tool_calls: z.array(TranscriptItemSchema).nullable(),
  recording_url: z.string().nullable(),
  call_cost: z.object({ total_credits_used: z.number(), duration_seconds: z.number() }).nullable(),
  call_analysis: z
    .object({
      summary: z.string(),
      user_sentiment: z.enum(USER_SENTIMENTS),
      custom_analysis_data: z.array(z.record(z.string(), z.unknown())),
    })
    .nullable(),
  opt_out_sensitive_data_storage: z.boolean(),
  latency: CallLatencySchema.nullable(),
  /** The model's token counts summed over the call's requests that reported them; null when none did. */
  llm_token_usage: z
    .object({
      prompt_tokens: z.int(),
      completion_tokens: z.int(),
      total_tokens: z.int(),
      turns: z.int().describe('model requests that reported usage'),
    })
    .nullable(),
  campaign_id: z.string().nullable(),
  batch_id: z.string().nullable(),
  transfer_destination: z
    .string()
    .nullable()
    .describe('the number transfer_call moved the caller to, once it connected'),
  transfer_timestamp: z.int().nullable().describe('Unix epoch ms when the transfer connected'),
});

export type CallRecord = z.infer<typeof CallRecordSchema>;
export type TranscriptMessage = z.infer<typeof TranscriptMessageSchema>;
export type TranscriptItem = z.infer<typeof TranscriptItemSchema>;
export type ProviderUse = z.infer<typeof ProviderUseSchema>;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];
export type FallbackReason = (typeof FALLBACK_REASONS)[number];

/** A new record as registration writes it: nothing has happened yet. */
export function registeredRecord(fields: {
  call_id: string;
  agent_id: string;
  agent_version: number;
  call_type: CallType;
  call_from: string | null;
  call_to: string | null;
  presentation_number?: string | null;
  metadata?: Record<string, unknown>;
  dynamic_variables?: Record<string, unknown>;
  opt_out_sensitive_data_storage?: boolean;
  campaign_id?: string | null;
  batch_id?: string | null;
}): CallRecord {
  return {
    call_id: fields.call_id,
    agent_id: fields.agent_id,
    agent_version: fields.agent_version,
    call_type: fields.call_type,
    call_status: 'registered',
    call_from: fields.call_from,
    call_to: fields.call_to,
    presentation_number: fields.presentation_number ?? null,
    metadata: fields.metadata ?? {},
    dynamic_variables: fields.dynamic_variables ?? {},
    disconnection_reason: null,
    disconnection_message: null,
    start_timestamp: null,
    end_timestamp: null,
    duration_ms: null,
    transcript: null,
    transcript_with_tool_calls: null,
    recording_url: null,
    call_cost: null,
    call_analysis: null,
    opt_out_sensitive_data_storage: fields.opt_out_sensitive_data_storage ?? false,
    latency: null,
    llm_token_usage: null,
    campaign_id: fields.campaign_id ?? null,
    batch_id: fields.batch_id ?? null,
    transfer_destination: null,
    transfer_timestamp: null,
  };
}

/** v1 list items: transcript entries carry role and content only. */
export function toV1Record(record: CallRecord): Omit<CallRecord, 'transcript' | 'transcript_with_tool_calls'> & {
  transcript: { role: string; content: string }[] | null;
  transcript_with_tool_calls: Record<string, unknown>[] | null;
} {
  return {
    ...record,
    transcript: record.transcript?.map(({ role, content }) => ({ role, content })) ?? null,
    transcript_with_tool_calls:
      record.transcript_with_tool_calls?.map(({ start_at: _s, end_at: _e, ...rest }) => rest) ?? null,
  };
}

/** The `metadata` a model request about this call carries; dynamic variables as strings (JSON for other values). */
export function llmMetadataOf(record: CallRecord, agentVersion: number): LlmRequestMetadata {
  return {
    call_id: record.call_id,
    agent_id: record.agent_id,
    agent_version: agentVersion,
    call_type: record.call_type,
    call_from: record.call_from,
    call_to: record.call_to,
    metadata: record.metadata,
    dynamic_variables: Object.fromEntries(
      Object.entries(record.dynamic_variables).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
    ),
  };
}
