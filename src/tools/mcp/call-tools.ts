// The MCP tools of one call. When the call starts, each of the agent's MCP servers is asked for its
// tools (through the service-wide catalog: a listing younger than a minute is reused), those the
// agent allows are kept, and each gets a name the model can call it by (naming.ts). A server that
// cannot be listed within MCP_DEFAULTS.listTimeoutMs costs its tools for this call only: it is
// logged and reported, and the call goes on with the rest. Connections are pooled per call: one per
// server, opened by its listing or by the first call of one of its tools, and closed with the call.
import type { Logger } from 'pino';
import type { McpTool } from '../../agents/schema.ts';
import type { FetchFunction } from '../../net/fetch.ts';
import { Watchdog } from '../../net/watchdog.ts';
import type { Timers } from '../../timers.ts';
import type { McpCatalog, McpListedTool } from './catalog.ts';
import { McpConnection, mcpFailureOf } from './connection.ts';
import { ToolNames } from './naming.ts';
import type { McpToolResult } from './result.ts';

export const MCP_DEFAULTS = {
  /**
   * Connecting to a server and listing its tools at the call's start may take this long (the connect timeout of
   * every outbound request): it runs while the greeting plays and the caller speaks, so only a slower listing keeps
   * the first reply waiting.
   */
  listTimeoutMs: 10_000,
  /** Tools offered to the model at most, the agent's own included (a chat-completions limit). */
  maxOfferedTools: 128,
  /** The largest answer read from a server (one HTTP response body); past it the request fails. */
  maxResponseBytes: 1024 * 1024,
} as const;

/** A tool one of the agent's MCP servers offers on this call. */
export interface McpOfferedTool {
  type: 'mcp';
  /** The name the model calls it by (unique on the call). */
  name: string;
  description: string;
  /** Its arguments' JSON Schema, as the server listed it. */
  parameters: Record<string, unknown>;
  /** Its name on its server. */
  remoteName: string;
  server: McpTool;
}

export interface McpCallToolsOptions {
  /** The agent's MCP servers, in its order. */
  servers: readonly McpTool[];
  /** The names of the agent's own tools: they keep them. */
  ownNames: readonly string[];
  catalog: McpCatalog;
  /** Every request to a server goes through it (net/fetch.ts). */
  fetch: FetchFunction;
  timers: Timers;
  log: Logger;
  /** A server could not be listed: none of its tools is offered on this call. */
  unreachable?: ((server: McpTool) => void) | undefined;
  listTimeoutMs?: number;
}

/** The server's origin, for logs: a URL's path or query may hold a key. */
const originOf = (url: string): string => new URL(url).origin;

/** `work`, or a rejection as soon as `signal` aborts (work shared with other calls is not stopped). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** The schema's copy the model and the argument check get: an object schema, without a `$schema` dialect tag. */
function parametersOf(inputSchema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _dialect, ...schema } = inputSchema;
  return { ...schema, type: 'object' };
}

export class McpCallTools {
  private readonly connections = new Map<McpTool, Promise<McpConnection>>();
  private closed = false;
  private offeredTools: McpOfferedTool[] = [];

  private constructor(private readonly o: McpCallToolsOptions) {}

  /** Lists every server's tools (all at once) and names the ones offered. */
  static async open(o: McpCallToolsOptions): Promise<McpCallTools> {
    const tools = new McpCallTools(o);
    const listed = await Promise.all(o.servers.map((server) => tools.list(server)));
    const names = new ToolNames(o.ownNames);
    let room = MCP_DEFAULTS.maxOfferedTools - o.ownNames.length;
    o.servers.forEach((server, i) => {
      const allowed = server.allowed_tools ? new Set(server.allowed_tools) : null;
      for (const tool of listed[i] ?? []) {
        if (allowed && !allowed.has(tool.name)) continue;
        if (room-- <= 0) {
          o.log.warn({ mcp_server: originOf(server.url), tool: tool.name }, 'too many tools: an MCP tool is left out');
          continue;
        }
        tools.offeredTools.push({
          type: 'mcp',
          name: names.claim(tool.name),
          description: tool.description,
          parameters: parametersOf(tool.inputSchema),
          remoteName: tool.name,
          server,
        });
      }
    });
    return tools;
  }

  /** The tools offered to the model, in the agent's order of servers and each server's own order. */
  get offered(): readonly McpOfferedTool[] {
    return this.offeredTools;
  }

  /** One tools/call of `tool` with `args`, stopped by `signal`; rejects when the request fails (mcpFailureOf). */
  async call(tool: McpOfferedTool, args: Record<string, unknown>, signal: AbortSignal): Promise<McpToolResult> {
    if (this.closed) throw new Error('the call is over');
    const connection = await this.connection(tool.server, signal);
    try {
      return await connection.callTool(tool.remoteName, args, signal);
    } catch (error) {
      // The server answered with an error: the connection is fine. Otherwise the next call opens a new one.
      if (mcpFailureOf(error).failure !== 'tool_error' && !signal.aborted) this.drop(tool.server, connection);
      throw error;
    }
  }

  /** Closes every connection of the call. */
  async close(): Promise<void> {
    this.closed = true;
    const open = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(open.map((pending) => pending.then((c) => c.close(this.o.timers)).catch(() => undefined)));
  }

  /** The server's tools, or none if it cannot be listed in time (reported). */
  private async list(server: McpTool): Promise<readonly McpListedTool[]> {
    const deadline = new Watchdog(this.o.timers);
    deadline.arm(this.o.listTimeoutMs ?? MCP_DEFAULTS.listTimeoutMs);
    try {
      const listing = this.o.catalog.tools(server, async () =>
        (await this.connection(server, deadline.signal)).listTools(deadline.signal),
      );
      return await untilAborted(listing, deadline.signal);
    } catch (error) {
      this.o.log.warn(
        { mcp_server: originOf(server.url), failure: deadline.expired ? 'timeout' : mcpFailureOf(error).failure },
        'an MCP server could not be listed: its tools are left out of this call',
      );
      this.o.unreachable?.(server);
      return [];
    } finally {
      deadline.close();
    }
  }

  /** The call's connection to `server`, opened now if there is none (a failed opening is not kept). */
  private connection(server: McpTool, signal: AbortSignal): Promise<McpConnection> {
    let pending = this.connections.get(server);
    if (!pending) {
      pending = McpConnection.open(server, this.o.fetch, signal);
      this.connections.set(server, pending);
      const opened = pending;
      opened.catch(() => {
        if (this.connections.get(server) === opened) this.connections.delete(server);
      });
      // Opened after the call ended: closed at once.
      void opened.then((c) => (this.closed ? c.close(this.o.timers) : undefined)).catch(() => undefined);
    }
    return untilAborted(pending, signal);
  }

  private drop(server: McpTool, connection: McpConnection): void {
    void this.connections.get(server)?.then((pooled) => {
      if (pooled !== connection) return;
      this.connections.delete(server);
      void connection.close(this.o.timers);
    });
  }
}
