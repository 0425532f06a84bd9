// Text the service asks of an agent's model for its own use, outside a conversation turn (the post-call
// analysis, a warm transfer's summary): only a chat-completions model reads such a request, so an agent's
// speech-to-speech model is passed over for the text models among its llm.fallback.
import type { AgentConfig, LlmConfig } from '../agents/schema.ts';
import { completeChat, type ChatResult, type LlmClientOptions } from './client.ts';
import type { ChatRequest } from './types.ts';

/** The chat-completions models among an agent's llm and llm.fallback, in the agent's order. */
export function chatModelsOf(llm: AgentConfig['llm']): LlmConfig[] {
  return [llm, ...(llm.fallback ?? [])].filter((m) => m.engine === undefined || m.engine === 'chat-completions');
}

/**
 * One whole answer to `request` from the first of `models` that gives one: a model that fails hands it to the next
 * (`failed` hears why, and which comes next); null when all failed.
 */
export async function firstAnswer(
  models: readonly LlmConfig[],
  request: ChatRequest,
  client: LlmClientOptions,
  failed?: (model: LlmConfig, error: unknown, next: LlmConfig | undefined) => void,
): Promise<(ChatResult & { answeredBy: LlmConfig }) | null> {
  for (const [i, model] of models.entries()) {
    try {
      return { ...(await completeChat(model, request, client)), answeredBy: model };
    } catch (error) {
      failed?.(model, error, models[i + 1]);
    }
  }
  return null;
}
