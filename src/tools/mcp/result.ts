// What the model and the transcript get of an MCP tool's result (a tools/call answer): its text
// content, other content named by kind, and its structured content as JSON when the text does not
// already carry it — cut like an HTTP tool's response (TOOL_DEFAULTS.maxContentBytes).
import { cutUtf8 } from '../../net/http.ts';

/** One content block of a tools/call result, as far as it is read here. */
export interface McpContentBlock {
  type: string;
  text?: unknown;
  mimeType?: unknown;
  uri?: unknown;
  resource?: unknown;
}

export interface McpToolResult {
  content?: readonly McpContentBlock[] | undefined;
  structuredContent?: unknown;
  isError?: boolean | undefined;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** One block as text: text as it is, an embedded text resource's text, anything else by its kind. */
function blockText(block: McpContentBlock): string {
  if (block.type === 'text' && typeof block.text === 'string') return block.text;
  if (block.type === 'resource' && isRecord(block.resource)) {
    if (typeof block.resource.text === 'string') return block.resource.text;
    return `[resource ${String(block.resource.uri ?? '')}]`;
  }
  if (block.type === 'resource_link') return `[resource ${String(block.uri ?? '')}]`;
  // Images and audio say nothing to a voice agent's model: it learns they were there.
  return `[${block.type}${typeof block.mimeType === 'string' ? ` ${block.mimeType}` : ''}]`;
}

/** Whether `text` is the JSON of `value` (the text block a server adds beside its structured content). */
function saysSameAs(text: string, value: unknown): boolean {
  try {
    return JSON.stringify(JSON.parse(text)) === JSON.stringify(value);
  } catch {
    return false;
  }
}

/** The result as one text, cut at `maxBytes` without leaving half a character. */
export function mcpResultText(result: McpToolResult, maxBytes: number): string {
  const parts = (result.content ?? []).map(blockText);
  const structured = result.structuredContent;
  if (structured !== undefined && !parts.some((part) => saysSameAs(part, structured)))
    parts.push(JSON.stringify(structured));
  return cutUtf8(Buffer.from(parts.join('\n'), 'utf8'), maxBytes);
}
