// The MCP tools of a call against a real MCP server (the official SDK's McpServer on 127.0.0.1):
// listing, the allowed_tools filter, names, the cache across calls, the SSE fallback, the egress
// policy, and a server that cannot be reached.
import { createServer } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { AGENT_DEFAULTS, type McpTool } from '../../../src/agents/schema.ts';
import { EgressPolicy } from '../../../src/net/egress.ts';
import { fetchThrough } from '../../../src/net/fetch.ts';
import { OutboundHttp } from '../../../src/net/http.ts';
import { realTimers } from '../../../src/timers.ts';
import { McpCatalog } from '../../../src/tools/mcp/catalog.ts';
import { McpCallTools, MCP_DEFAULTS, type McpCallToolsOptions } from '../../../src/tools/mcp/call-tools.ts';
import { freePort } from '../../helpers/net.ts';
import { startMcpServer, type TestMcpServer } from '../../helpers/mcp-server.ts';
import { testDispatcher } from '../../support/outbound.ts';

const log = pino({ level: 'silent' });
const fetch = fetchThrough(testDispatcher, { maxBodyBytes: MCP_DEFAULTS.maxResponseBytes });

function registerTools(server: McpServer): void {
  server.registerTool(
    'echo',
    { description: 'Echoes back the message', inputSchema: { message: z.string().describe('what to echo') } },
    ({ message }) => ({ content: [{ type: 'text', text: `Echo: ${message}` }] }),
  );
  server.registerTool(
    'get-sum',
    { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } },
    ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }),
  );
  server.registerTool('orders.lookup', { description: 'Finds an order' }, () => ({
    content: [{ type: 'text', text: 'shipped' }],
  }));
}

const servers: TestMcpServer[] = [];
const opened: McpCallTools[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((t) => t.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(mode: 'streamable-http' | 'sse' = 'streamable-http'): Promise<TestMcpServer> {
  const server = await startMcpServer(registerTools, mode);
  servers.push(server);
  return server;
}

function mcpTool(url: string, extra: Partial<McpTool> = {}): McpTool {
  return { type: 'mcp', url, timeout: AGENT_DEFAULTS.toolTimeoutSeconds, ...extra };
}

async function open(
  servers: McpTool[],
  extra: Partial<McpCallToolsOptions> = {},
): Promise<{ tools: McpCallTools; unreachable: string[] }> {
  const unreachable: string[] = [];
  const tools = await McpCallTools.open({
    servers,
    ownNames: [],
    catalog: new McpCatalog(() => 0),
    fetch,
    timers: realTimers,
    log,
    unreachable: (server) => unreachable.push(server.url),
    ...extra,
  });
  opened.push(tools);
  return { tools, unreachable };
}

const methods = (server: TestMcpServer) => server.received.map((r) => r.method);

describe("a call's MCP tools", () => {
  it("offers every tool the server lists, with the server's JSON schema of its arguments", async () => {
    const server = await serve();
    const { tools } = await open([mcpTool(server.url)]);
    expect(tools.offered.map((t) => [t.name, t.remoteName])).toEqual([
      ['echo', 'echo'],
      ['get-sum', 'get-sum'],
      ['orders_lookup', 'orders.lookup'],
    ]);
    const echo = tools.offered[0]!;
    expect(echo.description).toBe('Echoes back the message');
    expect(echo.parameters).toMatchObject({
      type: 'object',
      properties: { message: { type: 'string', description: 'what to echo' } },
      required: ['message'],
    });
    expect(echo.parameters).not.toHaveProperty('$schema');
    expect(methods(server)).toEqual(['initialize', 'notifications/initialized', 'tools/list']);
  });

  it('offers only the allowed_tools of a server', async () => {
    const server = await serve();
    const { tools } = await open([mcpTool(server.url, { allowed_tools: ['get-sum', 'not-listed'] })]);
    expect(tools.offered.map((t) => t.name)).toEqual(['get-sum']);
  });

  it("names a server's tool that clashes with the agent's own, or another server's, with a suffix", async () => {
    const [one, two] = [await serve(), await serve()];
    const { tools } = await open([mcpTool(one.url), mcpTool(two.url, { allowed_tools: ['echo'] })], {
      ownNames: ['get-sum', 'end_call'],
    });
    expect(tools.offered.map((t) => `${t.name}=${t.remoteName}@${t.server.url === one.url ? 1 : 2}`)).toEqual([
      'echo=echo@1',
      'get-sum_2=get-sum@1',
      'orders_lookup=orders.lookup@1',
      'echo_2=echo@2',
    ]);
  });

  it('lists a server once a minute across calls: a second call within it opens no connection to list', async () => {
    const server = await serve();
    let now = 0;
    const catalog = new McpCatalog(() => now);
    await open([mcpTool(server.url)], { catalog });
    now += 30_000;
    const { tools } = await open([mcpTool(server.url)], { catalog });
    expect(tools.offered).toHaveLength(3);
    expect(methods(server).filter((m) => m === 'initialize' || m === 'tools/list')).toEqual([
      'initialize',
      'tools/list',
    ]);
    now += 30_000;
    await open([mcpTool(server.url)], { catalog });
    expect(methods(server).filter((m) => m === 'tools/list')).toHaveLength(2);
  });

  it("sends the server's headers with every request", async () => {
    const server = await serve();
    const { tools } = await open([mcpTool(server.url, { headers: { authorization: 'Bearer s3cret' } })]);
    await tools.call(tools.offered[0]!, { message: 'hi' }, new AbortController().signal);
    expect(server.received.map((r) => r.headers.authorization)).toEqual(server.received.map(() => 'Bearer s3cret'));
    expect(methods(server)).toContain('tools/call');
  });

  it('falls back to the SSE transport when the server does not speak Streamable HTTP', async () => {
    const server = await serve('sse');
    const { tools, unreachable } = await open([mcpTool(server.url)]);
    expect(unreachable).toEqual([]);
    expect(tools.offered.map((t) => t.name)).toEqual(['echo', 'get-sum', 'orders_lookup']);
    const result = await tools.call(tools.offered[1]!, { a: 2, b: 3 }, new AbortController().signal);
    expect(result.content).toEqual([{ type: 'text', text: '5' }]);
    expect(methods(server)).toEqual(['initialize', 'notifications/initialized', 'tools/list', 'tools/call']);
  });

  it("leaves out the tools of a server that cannot be reached, reports it, and keeps the others'", async () => {
    const server = await serve();
    const down = `http://127.0.0.1:${await freePort()}/mcp`;
    const { tools, unreachable } = await open([mcpTool(down), mcpTool(server.url, { allowed_tools: ['echo'] })]);
    expect(unreachable).toEqual([down]);
    expect(tools.offered.map((t) => t.name)).toEqual(['echo']);
  });

  it('gives up listing a server that does not answer within the listing deadline', async () => {
    // A server that takes the connection and never answers.
    const hold = createServer(() => undefined);
    await new Promise<void>((resolve) => hold.listen(0, '127.0.0.1', resolve));
    const port = (hold.address() as { port: number }).port;
    try {
      const started = Date.now();
      const { tools, unreachable } = await open([mcpTool(`http://127.0.0.1:${port}/mcp`)], { listTimeoutMs: 200 });
      expect(tools.offered).toEqual([]);
      expect(unreachable).toHaveLength(1);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      hold.close();
    }
  });

  it('holds every request to the egress policy: a server on a refused address is never sent anything', async () => {
    const server = await serve();
    const guarded = new OutboundHttp(new EgressPolicy([]));
    try {
      const { tools, unreachable } = await open([mcpTool(server.url)], {
        fetch: fetchThrough(guarded.dispatcher(), { maxBodyBytes: MCP_DEFAULTS.maxResponseBytes }),
      });
      expect(tools.offered).toEqual([]);
      expect(unreachable).toEqual([server.url]);
      expect(server.received).toEqual([]);
    } finally {
      await guarded.close();
    }
  });
});
