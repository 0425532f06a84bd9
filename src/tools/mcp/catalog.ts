// The tools each MCP server lists, kept for a minute across calls: a call that starts while its
// servers' listings are fresh opens no connection before the model needs one. One entry per server
// URL and headers (two agents reaching one server with different credentials may see different
// tools); the key is a digest, so header values are not kept a second time. Calls starting together
// share one listing under way; a failed listing is not kept, so the next call tries again.
import { createHash } from 'node:crypto';
import type { McpTool } from '../../agents/schema.ts';

export const MCP_CATALOG_DEFAULTS = {
  /** How long a server's listing is used before it is asked again. */
  ttlMs: 60_000,
} as const;

/** One tool as its server lists it (tools/list). */
export interface McpListedTool {
  name: string;
  description: string;
  /** Its arguments' JSON Schema (type object). */
  inputSchema: Record<string, unknown>;
}

/** What identifies a server's listing: where it is and what is sent to it. */
export function mcpServerKey(server: Pick<McpTool, 'url' | 'headers'>): string {
  const headers = Object.entries(server.headers ?? {})
    .map(([name, value]) => [name.toLowerCase(), value] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256')
    .update(JSON.stringify([server.url, headers]))
    .digest('hex');
}

interface Entry {
  at: number;
  tools: readonly McpListedTool[];
}

export class McpCatalog {
  private readonly entries = new Map<string, Entry>();
  private readonly listing = new Map<string, Promise<readonly McpListedTool[]>>();

  /** `now`: milliseconds, injected so tests move time by hand. */
  constructor(
    private readonly now: () => number,
    private readonly ttlMs: number = MCP_CATALOG_DEFAULTS.ttlMs,
  ) {}

  /** The server's tools: kept ones while fresh, else what `list` gets (kept if it succeeds). */
  tools(
    server: Pick<McpTool, 'url' | 'headers'>,
    list: () => Promise<readonly McpListedTool[]>,
  ): Promise<readonly McpListedTool[]> {
    const key = mcpServerKey(server);
    const kept = this.entries.get(key);
    if (kept && this.now() - kept.at < this.ttlMs) return Promise.resolve(kept.tools);
    const under = this.listing.get(key);
    if (under) return under;
    const listed = list().then((tools) => {
      this.entries.set(key, { at: this.now(), tools });
      this.forgetStale();
      return tools;
    });
    const done = (): void => void this.listing.delete(key);
    listed.then(done, done);
    this.listing.set(key, listed);
    return listed;
  }

  /** Entries past their time are dropped when another is kept, so servers no longer used do not pile up. */
  private forgetStale(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) if (now - entry.at >= this.ttlMs) this.entries.delete(key);
  }
}
