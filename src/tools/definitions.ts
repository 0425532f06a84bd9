// What the model sees of an agent's tools: OpenAI `tools` entries, built-ins included.
import type { AgentTool } from '../agents/schema.ts';
import type { ChatTool } from '../llm/types.ts';

const END_CALL_PARAMETERS = {
  type: 'object',
  properties: { reason: { type: 'string', description: 'Why the call ends, in a few words.' } },
};

const NO_PARAMETERS = { type: 'object', properties: {} };

export function toolDefinition(tool: AgentTool): ChatTool {
  const parameters: Record<string, unknown> =
    tool.type === 'api' ? { ...tool.parameters } : tool.type === 'end_call' ? END_CALL_PARAMETERS : NO_PARAMETERS;
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters } };
}

export function toolDefinitions(tools: readonly AgentTool[]): ChatTool[] {
  return tools.map(toolDefinition);
}
