// AGENTS_FILE: a JSON agent or array of agents, each with an agent_id, loaded at start-up.
// `{{PUBLIC_URL}}` in any string is replaced, so a shipped file can point at this service.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { CodedError } from '../errors.ts';
import { AgentConfigSchema, type AgentConfig } from './schema.ts';

export const AGENT_ID = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and -, at most 64');

/** `tests`: the agent's test cases, checked by the agent-tests room that keeps them. */
const FileEntrySchema = AgentConfigSchema.extend({
  agent_id: AGENT_ID,
  tests: z.array(z.unknown()).max(100).default([]),
});

export class AgentsFileError extends CodedError<'AGENTS_FILE_INVALID'> {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('AGENTS_FILE_INVALID', message, options);
  }
}

export interface AgentsFileEntry {
  agentId: string;
  config: AgentConfig;
  tests: unknown[];
}

export function parseAgentsFile(text: string, publicUrl: string): AgentsFileEntry[] {
  let json: unknown;
  try {
    json = JSON.parse(text.replaceAll('{{PUBLIC_URL}}', publicUrl));
  } catch (error) {
    throw new AgentsFileError(`not valid JSON: ${(error as Error).message}`);
  }
  const list = Array.isArray(json) ? json : [json];
  return list.map((item, index) => {
    const parsed = FileEntrySchema.safeParse(item);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `[${index}].${i.path.join('.')}: ${i.message}`).join('; ');
      throw new AgentsFileError(`agent ${index} is invalid: ${problems}`);
    }
    const { agent_id, tests, ...config } = parsed.data;
    return { agentId: agent_id, config, tests };
  });
}

export function readAgentsFile(path: string, publicUrl: string): AgentsFileEntry[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new AgentsFileError(`cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    return parseAgentsFile(text, publicUrl);
  } catch (error) {
    throw new AgentsFileError(`${path}: ${(error as Error).message}`);
  }
}
