// What the model sees of an agent's tools: OpenAI `tools` entries, built-ins included, and the tools
// its MCP servers offer on the call (the servers themselves are not tools the model sees).
import type { AgentTool, McpTool } from '../agents/schema.ts';
import type { ChatTool } from '../llm/types.ts';
import type { McpOfferedTool } from './mcp/call-tools.ts';

/** A tool the model may call on a call: one of the agent's own, or one an MCP server of the agent offers. */
export type CallableTool = Exclude<AgentTool, McpTool> | McpOfferedTool;

/** The agent's own tools, by name (its MCP servers left out: their tools come when the call starts). */
export function ownTools(tools: readonly AgentTool[]): Exclude<AgentTool, McpTool>[] {
  return tools.filter((tool): tool is Exclude<AgentTool, McpTool> => tool.type !== 'mcp');
}

const END_CALL_PARAMETERS = {
  type: 'object',
  properties: { reason: { type: 'string', description: 'Why the call ends, in a few words.' } },
};

const NO_PARAMETERS = { type: 'object', properties: {} };

/** Keys a press_digits call may send at once. */
export const PRESS_DIGITS_MAX = 32;

const PRESS_DIGITS_PARAMETERS = {
  type: 'object',
  properties: {
    digits: {
      type: 'string',
      pattern: `^[0-9*#A-D]{1,${PRESS_DIGITS_MAX}}$`,
      description: 'The keys to press, in order: 0-9, * and #.',
    },
  },
  required: ['digits'],
};

const BUILT_IN_PARAMETERS = {
  end_call: END_CALL_PARAMETERS,
  transfer_call: NO_PARAMETERS,
  press_digits: PRESS_DIGITS_PARAMETERS,
} as const;

export function toolDefinition(tool: CallableTool): ChatTool {
  const parameters: Record<string, unknown> =
    tool.type === 'api' || tool.type === 'mcp' ? { ...tool.parameters } : BUILT_IN_PARAMETERS[tool.type];
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters } };
}

export function toolDefinitions(tools: readonly CallableTool[]): ChatTool[] {
  return tools.map(toolDefinition);
}
