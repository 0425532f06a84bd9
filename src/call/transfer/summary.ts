// What the person taking over a warm transfer hears first: the model's summary of the call so far.
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
