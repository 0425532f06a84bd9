// A real MCP server in the test process, from the official SDK (McpServer), on 127.0.0.1:0: over
// Streamable HTTP (stateless: each POST is answered by a fresh server, GET is refused with 405) or
// over the older SSE transport only (GET /sse opens the stream, POST /messages carries the messages,
// and a POST to /sse is refused as an SSE-only server refuses it). Records the JSON-RPC methods it
// was sent and the headers they came with.
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export interface TestMcpServer {
  /** The MCP endpoint: /mcp (Streamable HTTP) or /sse. */
  url: string;
  /** JSON-RPC methods received, in order, with the request's headers. */
  received: { method: string; headers: IncomingHttpHeaders }[];
  close(): Promise<void>;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const parts: Buffer[] = [];
  for await (const chunk of req) parts.push(chunk as Buffer);
  const text = Buffer.concat(parts).toString('utf8');
  return text === '' ? undefined : (JSON.parse(text) as unknown);
}

function methodsOf(body: unknown): string[] {
  const messages = Array.isArray(body) ? body : [body];
  return messages.flatMap((m) =>
    typeof m === 'object' && m !== null && 'method' in m && typeof m.method === 'string' ? [m.method] : [],
  );
}

export async function startMcpServer(
  register: (server: McpServer) => void,
  mode: 'streamable-http' | 'sse' = 'streamable-http',
): Promise<TestMcpServer> {
  const received: TestMcpServer['received'] = [];
  const sse = new Map<string, SSEServerTransport>();
  const open = new Set<McpServer>();
  const fresh = (): McpServer => {
    const server = new McpServer({ name: 'test-mcp', version: '1.0.0' });
    register(server);
    open.add(server);
    return server;
  };
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (mode === 'streamable-http' && path === '/mcp') {
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const body = await readJson(req);
      for (const method of methodsOf(body)) received.push({ method, headers: req.headers });
      const server = fresh();
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => {
        void transport.close();
        void server.close();
        open.delete(server);
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }
    if (mode === 'sse' && path === '/sse' && req.method === 'GET') {
      const transport = new SSEServerTransport('/messages', res);
      sse.set(transport.sessionId, transport);
      res.on('close', () => sse.delete(transport.sessionId));
      await fresh().connect(transport);
      return;
    }
    if (mode === 'sse' && path === '/messages' && req.method === 'POST') {
      const transport = sse.get(new URL(req.url ?? '/', 'http://x').searchParams.get('sessionId') ?? '');
      const body = await readJson(req);
      for (const method of methodsOf(body)) received.push({ method, headers: req.headers });
      if (!transport) return void res.writeHead(404).end();
      await transport.handlePostMessage(req, res, body);
      return;
    }
    res.writeHead(mode === 'sse' && path === '/sse' ? 405 : 404).end();
  };
  const sockets = new Set<Socket>();
  const http = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  http.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/${mode === 'sse' ? 'sse' : 'mcp'}`,
    received,
    async close() {
      await Promise.all([...open].map((s) => s.close().catch(() => undefined)));
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
