// Writes docs/agent.md, the reference of every field of an agent's configuration, from the zod
// schema the API validates with (its JSON Schema, input side: what a client sends). A test checks
// the page is current, so a field added to src/agents/schema.ts without a regenerated page fails.
//   node --import tsx scripts/agent-reference.ts          rewrite docs/agent.md
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { AgentConfigSchema } from '../src/agents/schema.ts';

interface JsonSchema {
  type?: string | string[];
  description?: string;
  default?: unknown;
  enum?: unknown[];
  const?: unknown;
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
  maxItems?: number;
  nullable?: boolean;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  additionalProperties?: JsonSchema | boolean;
}

interface Row {
  path: string;
  type: string;
  fallback: string;
  about: string;
}

const HEADER = `# Agent reference

Every field of an agent's configuration (\`POST /v2/agents\`, \`PATCH /v2/agents/{agent_id}\`), with
its type, its default and what it does. Only \`agent_name\` and \`llm\` are required. Nested objects
replace as a whole on PATCH. This page is generated from the schema the API validates with
(\`src/agents/schema.ts\`): run \`npm run docs:agent\` after changing it; a test fails while the page is
out of date.

`;

function typeOf(s: JsonSchema): string {
  const variants = s.anyOf ?? s.oneOf;
  if (variants) {
    const named = variants.map(typeOf).filter((t) => t !== 'null');
    const nullable = variants.some((v) => v.type === 'null') || s.nullable;
    return [...new Set(named)].join(' \\| ') + (nullable ? ' \\| null' : '');
  }
  if (s.const !== undefined) return `\`${JSON.stringify(s.const)}\``;
  if (s.enum) return s.enum.map((v) => `\`${JSON.stringify(v)}\``).join(' \\| ') + (s.nullable ? ' \\| null' : '');
  const base = Array.isArray(s.type) ? s.type.join(' \\| ') : (s.type ?? 'any');
  let t = base;
  if (base === 'array' && s.items) t = `${typeOf(s.items)}[]`;
  if (base === 'string' && s.format === 'uri') t = 'URL';
  const bounds: string[] = [];
  const max = s.maximum !== undefined && s.maximum < Number.MAX_SAFE_INTEGER ? s.maximum : undefined;
  const min = s.minimum !== undefined && s.minimum > Number.MIN_SAFE_INTEGER ? s.minimum : undefined;
  if (s.exclusiveMinimum !== undefined)
    bounds.push(max === undefined ? `> ${s.exclusiveMinimum}` : `> ${s.exclusiveMinimum}, ≤ ${max}`);
  else if (min !== undefined || max !== undefined)
    bounds.push(max === undefined ? `≥ ${min}` : min === undefined ? `≤ ${max}` : `${min}–${max}`);
  if (s.maxLength !== undefined) bounds.push(`≤ ${s.maxLength} chars`);
  if (s.maxItems !== undefined) bounds.push(`≤ ${s.maxItems} items`);
  if (bounds.length) t += ` (${bounds.join(', ')})`;
  return t + (s.nullable ? ' \\| null' : '');
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');
}

function rows(schema: JsonSchema, prefix: string, out: Row[]): Row[] {
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    const path = prefix ? `${prefix}.${name}` : name;
    const required = (schema.required ?? []).includes(name) && field.default === undefined;
    const fallback = field.default !== undefined ? `\`${JSON.stringify(field.default)}\`` : required ? 'required' : '—';
    out.push({ path, type: typeOf(field), fallback, about: cell(field.description ?? '') });
    const objectVariant = [field, ...(field.anyOf ?? [])].find((v) => v.properties);
    if (objectVariant) rows(objectVariant, path, out);
  }
  return out;
}

function toolSection(tool: JsonSchema): string {
  const kind = (tool.properties?.type?.const ?? '?') as string;
  const own = rows(tool, '', []).filter((r) => r.path !== 'type');
  return `### \`"type": "${kind}"\`\n\n${tool.description ? `${cell(tool.description)}\n\n` : ''}${table(own)}`;
}

function table(list: Row[]): string {
  const lines = ['| field | type | default | what it does |', '|---|---|---|---|'];
  for (const r of list) lines.push(`| \`${r.path}\` | ${r.type} | ${r.fallback} | ${r.about} |`);
  return `${lines.join('\n')}\n`;
}

/** The page as it should read for the schema of this build. */
export function agentReference(): string {
  const schema = z.toJSONSchema(AgentConfigSchema, {
    target: 'draft-2020-12',
    io: 'input',
    unrepresentable: 'any',
  }) as JsonSchema;
  const top = rows(schema, '', []).filter((r) => !r.path.startsWith('tools.'));
  const tools = schema.properties?.tools?.items;
  const toolKinds = tools?.oneOf ?? tools?.anyOf ?? [];
  return `${HEADER}## Fields\n\n${table(top)}\n## Tools\n\nEach entry of \`tools\` is one of these kinds, told apart by \`type\`.\n\n${toolKinds.map(toolSection).join('\n')}`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const file = join(import.meta.dirname, '..', 'docs', 'agent.md');
  writeFileSync(file, agentReference());
  process.stdout.write(`wrote ${file}\n`);
}
