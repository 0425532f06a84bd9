// The model side of one call: the agent's language model and tools behind AgentBrain, counting the
// tokens every request reports, and refusing a transfer where the line cannot make one (a browser).
// The agent's MCP servers are listed as the brain is made (the call's start); the first reply waits
// for that listing (bounded by MCP_DEFAULTS.listTimeoutMs), and the call's connections close with it.
import type { Logger } from 'pino';
import type { AgentConfig, LlmConfig, McpTool } from '../../agents/schema.ts';
import type { CallRecord } from '../../records/record.ts';
import { LLM_CLIENT_DEFAULTS } from '../../llm/client.ts';
import type { LlmRequestMetadata } from '../../llm/types.ts';
import { fetchThrough } from '../../net/fetch.ts';
import type { OutboundHttp } from '../../net/http.ts';
import type { Timers } from '../../timers.ts';
import { ToolExecutor, type ToolRun } from '../../tools/executor.ts';
import type { McpCatalog } from '../../tools/mcp/catalog.ts';
import { MCP_DEFAULTS, McpCallTools } from '../../tools/mcp/call-tools.ts';
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
  /** What the agent's MCP servers need (without it, an agent's MCP servers offer no tools). */
  mcp?: BrainMcp | undefined;
  /** The agent's models in order (provider-chains.ts); its own llm only when absent. */
  models?: ProviderChain<LlmConfig> | undefined;
}

export interface BrainMcp {
  /** The service's listings of MCP servers, shared by every call. */
  catalog: McpCatalog;
  timers: Timers;
  log: Logger;
  /** One of the agent's MCP servers could not be listed: its tools are not offered on this call. */
  unreachable?: ((server: McpTool) => void) | undefined;
}

export interface CountedBrain {
  brain: AgentBrain;
  /** The tokens of every request so far; null when no request reported any. */
  usage(): TokenUsage | null;
  /** The call is over: its connections to MCP servers close. */
  close(): Promise<void>;
}

/** The call's MCP tools, listed now; undefined when the agent has no MCP server. */
export function openMcpTools(
  o: Pick<AgentBrainOptions, 'agent' | 'mcp' | 'outbound'>,
): Promise<McpCallTools | undefined> {
  const servers = o.agent.tools.filter((tool): tool is McpTool => tool.type === 'mcp');
  if (servers.length === 0 || !o.mcp) return Promise.resolve(undefined);
  return McpCallTools.open({
    servers,
    ownNames: o.agent.tools.flatMap((tool) => ('name' in tool ? [tool.name] : [])),
    catalog: o.mcp.catalog,
    fetch: fetchThrough(o.outbound.dispatcher(), { maxBodyBytes: MCP_DEFAULTS.maxResponseBytes }),
    timers: o.mcp.timers,
    log: o.mcp.log,
    unreachable: o.mcp.unreachable,
  });
}

export function createAgentBrain(o: AgentBrainOptions): CountedBrain {
  const usage: TokenUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, turns: 0 };
  const transferRefusal = o.transportKind === 'web' ? WEB_TRANSFER_REFUSAL : undefined;
  // Made on the first reply: it needs the call's clock, which the session gives with it.
  let executor: ToolExecutor | undefined;
  const mcpReady = openMcpTools(o);
  const brain: AgentBrain = {
    async respond(messages, hooks, signal, clock) {
      const mcp = await mcpReady;
      executor ??= new ToolExecutor(o.agent.tools, { clock, dispatcher: o.outbound.dispatcher(), mcp });
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
  return {
    brain,
    usage: () => (usage.turns > 0 ? { ...usage } : null),
    close: async () => (await mcpReady)?.close(),
  };
}
