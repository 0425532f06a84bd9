// The model side of one call: the agent's language model and tools behind AgentBrain, counting the
// tokens every request reports, and refusing a transfer where the line cannot make one (a browser).
import type { AgentConfig, LlmConfig } from '../../agents/schema.ts';
import type { CallRecord } from '../../records/record.ts';
import { LLM_CLIENT_DEFAULTS } from '../../llm/client.ts';
import type { LlmRequestMetadata } from '../../llm/types.ts';
import type { OutboundHttp } from '../../net/http.ts';
import { ToolExecutor, type ToolRun } from '../../tools/executor.ts';
import type { ProviderChain } from '../providers.ts';
import type { CallTransport } from '../transport.ts';
import type { AgentBrain } from './model-turn.ts';
import { WEB_TRANSFER_REFUSAL } from './prompts.ts';
import { runReply, type ReplyHooks } from './reply.ts';

export type TokenUsage = NonNullable<CallRecord['llm_token_usage']>;

export interface AgentBrainOptions {
  agent: AgentConfig;
  metadata: LlmRequestMetadata;
  /** Every request of the model and the tools goes through it. */
  outbound: OutboundHttp;
  /** The line's kind: a browser call cannot be transferred. */
  transportKind: CallTransport['kind'];
  /** Each HTTP tool that answered, failed or timed out (the call's events report it). */
  toolFinished?: ((run: ToolRun) => void) | undefined;
  /** The agent's models in order (provider-chains.ts); its own llm only when absent. */
  models?: ProviderChain<LlmConfig> | undefined;
}

export interface CountedBrain {
  brain: AgentBrain;
  /** The tokens of every request so far; null when no request reported any. */
  usage(): TokenUsage | null;
}

export function createAgentBrain(o: AgentBrainOptions): CountedBrain {
  const usage: TokenUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, turns: 0 };
  const transferRefusal = o.transportKind === 'web' ? WEB_TRANSFER_REFUSAL : undefined;
  // Made on the first reply: it needs the call's clock, which the session gives with it.
  let executor: ToolExecutor | undefined;
  const brain: AgentBrain = {
    respond(messages, hooks, signal, clock) {
      executor ??= new ToolExecutor(o.agent.tools, { clock, dispatcher: o.outbound.dispatcher() });
      const client = { dispatcher: o.outbound.dispatcher(LLM_CLIENT_DEFAULTS.connectTimeoutMs) };
      const counted: ReplyHooks = {
        ...hooks,
        transferRefusal,
        onUsage(used) {
          usage.prompt_tokens += used.prompt_tokens;
          usage.completion_tokens += used.completion_tokens;
          usage.total_tokens += used.total_tokens;
          usage.turns++;
        },
        onToolFinished(run) {
          hooks.onToolFinished?.(run);
          o.toolFinished?.(run);
        },
      };
      return runReply({
        llm: o.models?.current ?? o.agent.llm,
        models: o.models,
        messages,
        metadata: o.metadata,
        tools: executor,
        hooks: counted,
        signal,
        client,
      });
    },
  };
  return { brain, usage: () => (usage.turns > 0 ? { ...usage } : null) };
}
