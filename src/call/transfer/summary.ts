// What the person taking over a warm transfer hears first: the model's summary of the call so far. A model
// that writes text for the service apart from the conversation (a speech-to-speech one: AgentBrain.writeAside)
// writes it so; a chat-completions model answers the request as a turn, unspoken.
import type { ChatMessage } from '../../llm/types.ts';
import type { AgentBrain } from '../model/model-turn.ts';
import { transferSummaryRequest } from '../model/prompts.ts';
import { WARM_TRANSFER_DEFAULTS } from './warm-transfer.ts';

/** Asks the model for the summary; given up once `callOver` resolves (a caller who hangs up on hold needs none). */
export async function askTransferSummary(
  brain: AgentBrain,
  history: readonly ChatMessage[],
  clock: () => number,
  callOver: Promise<void>,
): Promise<string> {
  const parts: string[] = [];
  const controller = new AbortController();
  void callOver.then(() => controller.abort());
  const messages = [...history, { role: 'system' as const, content: transferSummaryRequest() }];
  if (brain.writeAside)
    return (await brain.writeAside(messages, controller.signal)).trim() || WARM_TRANSFER_DEFAULTS.fallbackSummary;
  await brain.respond(
    messages,
    {
      onChunk(text) {
        parts.push(text);
      },
      async confirmSpoken() {
        return false;
      },
    },
    controller.signal,
    clock,
  );
  return parts.join(' ').trim() || WARM_TRANSFER_DEFAULTS.fallbackSummary;
}
