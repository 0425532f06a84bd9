// A simulated caller played by a chat-completions model: it hears the agent's words, says what the
// persona would say next, and hangs up when its goal is met (or after its last turn).
import type { LlmConfig } from '../agents/schema.ts';
import type { SimCallee, SimCalleeResult } from '../carriers/sim/callee.ts';
import { completeChat, type LlmClientOptions } from '../llm/client.ts';
import type { ChatMessage, LlmRequestMetadata } from '../llm/types.ts';
import { AGENT_TURN_TIMEOUT_MS, type SpeakText } from './callers.ts';

/** First line of the caller model's system prompt, so a model server (the demo) can tell it apart. */
export const SIMULATED_CALLER_TAG = 'SIMULATED CALLER';
/** The caller model ends a reply with this when it is done: what comes before it is said, then it hangs up. */
export const HANG_UP_MARK = '[hang up]';
/** How long the caller, done, waits for the agent's answer to its last words before hanging up. */
const FAREWELL_TIMEOUT_MS = 10_000;

/** The lines of the caller model's instructions that carry the test's persona and goal. */
export const PERSONA_LINE = 'Who you are: ';
export const GOAL_LINE = 'What you want from this call: ';

export function callerSystemPrompt(persona: string, goal: string): string {
  return [
    SIMULATED_CALLER_TAG,
    'You are a person on a phone call with an AI voice agent. Stay in character; never say you are an AI or a test.',
    `${PERSONA_LINE}${persona}`,
    `${GOAL_LINE}${goal}`,
    'Each user message is what the agent just said. Reply with only the words you say next, one or two short spoken sentences.',
    `When your goal is met or there is nothing more to say, say goodbye and end your reply with ${HANG_UP_MARK}.`,
  ].join('\n');
}

export interface PersonaCallerOptions {
  persona: string;
  goal: string;
  maxTurns: number;
  llm: LlmConfig;
  voice: string;
  speak: SpeakText;
  metadata: LlmRequestMetadata;
  client: LlmClientOptions;
}

/** Plays the caller on `callee`'s line until it hangs up, the line closes, or a turn fails. */
export async function runPersonaCaller(callee: SimCallee, o: PersonaCallerOptions): Promise<SimCalleeResult> {
  const history: ChatMessage[] = [{ role: 'system', content: callerSystemPrompt(o.persona, o.goal) }];
  for (let turn = 0; turn < o.maxTurns; turn++) {
    const listened = await callee.continueWith([{ kind: 'wait_for_agent', timeoutMs: AGENT_TURN_TIMEOUT_MS }]);
    if (!listened.ok || callee.line.closed) return listened;
    history.push({ role: 'user', content: callee.agentWordsSinceCaller() || '(silence)' });
    let reply: string;
    try {
      reply = (
        await completeChat({ ...o.llm, stream: false }, { messages: history, metadata: o.metadata }, o.client)
      ).content.trim();
    } catch (error) {
      return { ok: false, step: turn, reason: `the caller model failed: ${(error as Error).message}` };
    }
    history.push({ role: 'assistant', content: reply });
    const markAt = reply.toLowerCase().indexOf(HANG_UP_MARK);
    const words = (markAt === -1 ? reply : reply.slice(0, markAt)).trim();
    if (words !== '') {
      const spoken = await callee.continueWith([
        { kind: 'say', file: `(persona, turn ${turn + 1})`, mulaw: await o.speak(words, o.voice) },
      ]);
      if (!spoken.ok) return spoken;
    }
    if (markAt !== -1 || words === '') break;
  }
  // The agent's answer to the last words (its goodbye, or ending the call itself) is heard out before hanging up.
  if (!callee.line.closed) await callee.continueWith([{ kind: 'wait_for_agent', timeoutMs: FAREWELL_TIMEOUT_MS }]);
  return { ok: true };
}
