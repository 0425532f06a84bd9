// One connection to an MCP server through the official client (@modelcontextprotocol/sdk), every
// request of it sent with the fetch it is given (net/fetch.ts: the egress policy applies). The
// messages used, all JSON-RPC 2.0:
//   initialize → {protocolVersion, capabilities, serverInfo}, then the notifications/initialized
//     notification (the client's connect() does both);
//   tools/list {cursor?} → {tools: [{name, description?, inputSchema: {type: "object", …}}], nextCursor?};
//   tools/call {name, arguments} → {content: [{type: "text", text} | …], structuredContent?, isError?};
//   notifications/cancelled {requestId} when a call is given up (the client sends it on abort).
// Transport: Streamable HTTP first (each message POSTed to the URL, the answer as JSON or an SSE
// stream). A server that answers that POST with a 4xx status (404, 405: it does not speak Streamable
// HTTP) is tried with the older SSE transport: a GET of the URL opens an event stream whose first
// `endpoint` event says where to POST messages, and answers come back on the stream.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { McpTool } from '../../agents/schema.ts';
import type { FetchFunction } from '../../net/fetch.ts';
import { Watchdog, type WatchdogTimers } from '../../net/watchdog.ts';
import type { McpListedTool } from './catalog.ts';
import type { McpToolResult } from './result.ts';

export const MCP_CONNECTION_DEFAULTS = {
  /** Pages of tools/list read at most. */
  maxListPages: 10,
  /** The longest description kept of a listed tool (an HTTP tool's limit). */
  maxDescriptionChars: 4_000,
  /** The longest wait for a server to acknowledge the end of a session. */
  closeMs: 2_000,
} as const;

/** How the service introduces itself in initialize. */
const CLIENT_INFO = { name: 'voicecall', version: '1' } as const;

/** The SDK's own per-request timer is only a backstop: the callers' deadlines run on the injected timers. */
const BACKSTOP_TIMEOUT_MS = 10 * 60_000;

export type McpTransportKind = 'streamable-http' | 'sse';

/** Why a request to a server failed, as the model and the logs are told. */
export type McpFailure = 'network' | 'timeout' | 'tool_error';

/** A failure's kind; `message`: the server's own error message, only for an error it answered with. */
export function mcpFailureOf(error: unknown): { failure: McpFailure; message: string | null } {
  if (error instanceof McpError) {
    if (error.code === Number(ErrorCode.RequestTimeout)) return { failure: 'timeout', message: null };
    if (error.code === Number(ErrorCode.ConnectionClosed)) return { failure: 'network', message: null };
    return { failure: 'tool_error', message: error.message };
  }
  // Sockets, the egress policy, HTTP statuses, oversize answers: never detailed to the model.
  return { failure: 'network', message: null };
}

/** Whether the server answered the Streamable HTTP POST as a server that does not speak it would. */
function speaksOnlySse(error: unknown): boolean {
  return error instanceof StreamableHTTPError && error.code !== undefined && error.code >= 400 && error.code < 500;
}

export class McpConnection {
  private constructor(
    private readonly client: Client,
    private readonly transport: StreamableHTTPClientTransport | SSEClientTransport,
    readonly kind: McpTransportKind,
  ) {}

  /** Connects (initialize), Streamable HTTP first, SSE if the server does not speak it. */
  static async open(server: McpTool, fetch: FetchFunction, signal: AbortSignal): Promise<McpConnection> {
    const url = new URL(server.url);
    const requestInit: RequestInit = { headers: { ...(server.headers ?? {}) } };
    try {
      return await McpConnection.connect(
        new StreamableHTTPClientTransport(url, { fetch, requestInit }),
        'streamable-http',
        signal,
      );
    } catch (error) {
      if (!speaksOnlySse(error) || signal.aborted) throw error;
    }
    return McpConnection.connect(new SSEClientTransport(url, { fetch, requestInit }), 'sse', signal);
  }

  private static async connect(
    transport: StreamableHTTPClientTransport | SSEClientTransport,
    kind: McpTransportKind,
    signal: AbortSignal,
  ): Promise<McpConnection> {
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    // Nothing is listened for on the connection but answers: the client's own errors surface as failed requests.
    client.onerror = () => undefined;
    const aborted = (): void => void client.close().catch(() => undefined);
    signal.addEventListener('abort', aborted, { once: true });
    try {
      await client.connect(transport, { signal, timeout: BACKSTOP_TIMEOUT_MS });
      return new McpConnection(client, transport, kind);
    } catch (error) {
      await client.close().catch(() => undefined);
      throw error;
    } finally {
      signal.removeEventListener('abort', aborted);
    }
  }

  /** Every tool the server lists (tools/list, page after page). */
  async listTools(signal: AbortSignal): Promise<McpListedTool[]> {
    const tools: McpListedTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MCP_CONNECTION_DEFAULTS.maxListPages; page++) {
      const listed = await this.client.listTools(cursor === undefined ? {} : { cursor }, {
        signal,
        timeout: BACKSTOP_TIMEOUT_MS,
      });
      for (const tool of listed.tools) {
        tools.push({
          name: tool.name,
          description: (tool.description ?? tool.title ?? '').slice(0, MCP_CONNECTION_DEFAULTS.maxDescriptionChars),
          inputSchema: { ...tool.inputSchema },
        });
      }
      cursor = listed.nextCursor;
      if (cursor === undefined) break;
    }
    return tools;
  }

  /** One tools/call; a failed request rejects (see mcpFailureOf), a tool's own failure is `isError`. */
  async callTool(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<McpToolResult> {
    const result = await this.client.callTool({ name, arguments: args }, undefined, {
      signal,
      timeout: BACKSTOP_TIMEOUT_MS,
    });
    const content = Array.isArray(result.content) ? (result.content as McpToolResult['content']) : [];
    return { content, structuredContent: result.structuredContent, isError: result.isError === true };
  }

  /** Ends the session (a Streamable HTTP server is told, so it can let go of it) and the connection. */
  async close(timers: WatchdogTimers): Promise<void> {
    if (this.transport instanceof StreamableHTTPClientTransport && this.transport.sessionId !== undefined) {
      // Closing the client aborts the DELETE still under way.
      const limit = new Watchdog(timers);
      limit.signal.addEventListener('abort', () => void this.client.close().catch(() => undefined), { once: true });
      limit.arm(MCP_CONNECTION_DEFAULTS.closeMs);
      await this.transport.terminateSession().catch(() => undefined);
      limit.close();
    }
    await this.client.close().catch(() => undefined);
  }
}
