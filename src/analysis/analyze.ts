// Post-call analysis: one non-streamed request to the agent's own model, asking for a JSON
// summary, the user's sentiment and the agent's custom fields. The model's word is checked
// with zod; when the model fails, the call still gets an analysis (unknown, empty) and the
// log says why.
import type { Logger } from 'pino';
import { z } from 'zod';
import type { AgentConfig } from '../agents/schema.ts';
import { chatModelsOf, firstAnswer } from '../llm/chat-models.ts';
import type { LlmClientOptions } from '../llm/client.ts';
import type { ChatMessage, LlmRequestMetadata } from '../llm/types.ts';

export const USER_SENTIMENTS = ['positive', 'neutral', 'negative', 'unknown'] as const;
export type UserSentiment = (typeof USER_SENTIMENTS)[number];

export interface CallAnalysis {
  summary: string;
  user_sentiment: UserSentiment;
  /** One object per custom field of the agent: {name, value}; value null when the model gave none. */
  custom_analysis_data: Record<string, unknown>[];
}

export interface TranscriptLine {
  role: string;
  content: string;
}

/** First line of every analysis request, so a model server (the demo) can tell it from a conversation turn. */
export const ANALYSIS_REQUEST_TAG = 'POST-CALL ANALYSIS REQUEST';
/** Line prefix that carries the custom fields as JSON. */
export const ANALYSIS_FIELDS_PREFIX = 'Custom fields (JSON): ';

const ReplySchema = z.object({
  summary: z.string().default(''),
  user_sentiment: z.string().default('unknown'),
  custom_analysis_data: z
    .union([
      z.array(z.object({ name: z.string(), value: z.unknown() })),
      z.record(z.string(), z.unknown()).transform((r) => Object.entries(r).map(([name, value]) => ({ name, value }))),
    ])
    .default([]),
});

export function emptyAnalysis(fields: AgentConfig['analysis']['custom_fields'] = []): CallAnalysis {
  return {
    summary: '',
    user_sentiment: 'unknown',
    custom_analysis_data: fields.map((f) => ({ name: f.name, value: null })),
  };
}

export function buildAnalysisMessages(agent: AgentConfig, transcript: readonly TranscriptLine[]): ChatMessage[] {
  const fields = agent.analysis.custom_fields.map((f) => ({ name: f.name, type: f.type, description: f.description }));
  const system = [
    ANALYSIS_REQUEST_TAG,
    'You analyse a finished phone call between an AI voice agent and a user.',
    'Reply with one JSON object and nothing else:',
    '{"summary": "<two or three sentences>", "user_sentiment": "positive" | "neutral" | "negative" | "unknown",',
    ' "custom_analysis_data": [{"name": "<field name>", "value": <value of the field type, or null>}]}',
    agent.analysis.summary_prompt ? `How to summarise: ${agent.analysis.summary_prompt}` : '',
    `${ANALYSIS_FIELDS_PREFIX}${JSON.stringify(fields)}`,
  ]
    .filter((l) => l !== '')
    .join('\n');
  const lines = transcript.map((t) => `${t.role}: ${t.content}`).join('\n');
  return [
    { role: 'system', content: system },
    { role: 'user', content: `Transcript:\n${lines}` },
  ];
}

/** The JSON object in a model's reply that may wrap it in prose or a code fence. */
export function jsonObjectIn(content: string): { json: unknown } | { error: string } {
  const start = content.indexOf('{');
  const end = content.lastIndexOf('}');
  if (start < 0 || end <= start) return { error: 'reply holds no JSON object' };
  try {
    return { json: JSON.parse(content.slice(start, end + 1)) };
  } catch {
    return { error: 'reply JSON does not parse' };
  }
}

export function parseAnalysisReply(content: string, agent: AgentConfig): CallAnalysis | { error: string } {
  const found = jsonObjectIn(content);
  if ('error' in found) return found;
  const parsed = ReplySchema.safeParse(found.json);
  if (!parsed.success) return { error: `reply has the wrong shape: ${parsed.error.issues[0]?.message ?? ''}` };
  const sentiment = parsed.data.user_sentiment.trim().toLowerCase();
  const given = new Map(parsed.data.custom_analysis_data.map((d) => [d.name, d.value]));
  return {
    summary: parsed.data.summary.trim(),
    user_sentiment: (USER_SENTIMENTS as readonly string[]).includes(sentiment)
      ? (sentiment as UserSentiment)
      : 'unknown',
    custom_analysis_data: agent.analysis.custom_fields.map((f) => {
      const value = given.get(f.name);
      return { name: f.name, value: typeof value === f.type ? value : null };
    }),
  };
}

export interface AnalyzeCallInput {
  agent: AgentConfig;
  transcript: readonly TranscriptLine[];
  metadata: LlmRequestMetadata;
  logger: Logger;
  client: LlmClientOptions;
}

export async function analyzeCall(input: AnalyzeCallInput): Promise<CallAnalysis> {
  const { agent, logger } = input;
  const log = logger.child({ call_id: input.metadata.call_id, stage: 'analysis' });
  if (input.transcript.length === 0) {
    log.info({ reason: 'empty transcript' }, 'call analysis skipped');
    return emptyAnalysis(agent.analysis.custom_fields);
  }
  // The agent's text models in its order: a model that fails hands the analysis to the next, as it would a turn.
  // A speech-to-speech model reads no chat request, so an agent with only those has none.
  const models = chatModelsOf(agent.llm);
  if (models.length === 0) {
    log.info({ reason: 'no chat-completions model among llm and llm.fallback' }, 'call analysis skipped');
    return emptyAnalysis(agent.analysis.custom_fields);
  }
  const result = await firstAnswer(
    models.map((model) => ({ ...model, stream: false, temperature: 0 })),
    { messages: buildAnalysisMessages(agent, input.transcript), metadata: input.metadata },
    input.client,
    (model, err, next) => {
      const reason = err instanceof Error ? err.message : String(err);
      const code = (err as { code?: unknown } | null)?.code;
      if (next)
        log.warn({ reason, code, model: model.model, next: next.model }, 'call analysis moves to the next model');
      else log.warn({ reason, code, model: model.model }, 'call analysis fell back to unknown');
    },
  );
  if (!result) return emptyAnalysis(agent.analysis.custom_fields);
  const analysis = parseAnalysisReply(result.content, agent);
  if ('error' in analysis) {
    log.warn({ reason: analysis.error, model: result.answeredBy.model }, 'call analysis fell back to unknown');
    return emptyAnalysis(agent.analysis.custom_fields);
  }
  return analysis;
}
