// What the model sees of an agent's tools: OpenAI `tools` entries, built-ins included.
import type { AgentTool } from '../agents/schema.ts';
import type { ChatTool } from '../llm/types.ts';

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

export function toolDefinition(tool: AgentTool): ChatTool {
  const parameters: Record<string, unknown> =
    tool.type === 'api' ? { ...tool.parameters } : BUILT_IN_PARAMETERS[tool.type];
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters } };
}

export function toolDefinitions(tools: readonly AgentTool[]): ChatTool[] {
  return tools.map(toolDefinition);
}
