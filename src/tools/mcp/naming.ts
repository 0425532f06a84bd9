// The names the model calls an MCP server's tools by. A server may name a tool with characters a
// chat-completions function name cannot hold (dots, slashes, spaces) or at more than 64 characters,
// and two servers — or a server and the agent itself — may use one name. So each name is made safe
// (every other character becomes _, cut at 64) and then unique, predictably: names are claimed in
// order (the agent's own tools first, then each server in the agent's order, its tools in the order
// it lists them), and a name already claimed gets the first free suffix _2, _3, … (docs/mcp.md).

/** The longest function name the model accepts. */
export const TOOL_NAME_MAX = 64;

/** `name` as a function name: letters, digits, _ and - only, at most 64 characters. */
export function safeToolName(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, TOOL_NAME_MAX);
  return safe === '' ? 'tool' : safe;
}

/** Hands out unique function names in the order they are asked for. */
export class ToolNames {
  private readonly taken = new Set<string>();

  /** `names`: claimed first, as they are (the agent's own tools). */
  constructor(names: Iterable<string> = []) {
    for (const name of names) this.taken.add(name);
  }

  /** The name the model sees for a tool the server calls `wanted`, claimed now. */
  claim(wanted: string): string {
    const base = safeToolName(wanted);
    let name = base;
    for (let n = 2; this.taken.has(name); n++) {
      const suffix = `_${n}`;
      name = base.slice(0, TOOL_NAME_MAX - suffix.length) + suffix;
    }
    this.taken.add(name);
    return name;
  }
}
