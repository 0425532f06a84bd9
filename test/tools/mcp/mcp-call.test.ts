// Calling an MCP server's tool as the model does (ToolExecutor), against a real MCP server (the
// official SDK's McpServer on 127.0.0.1): the transcript items, the result text and its cap, the
// deadline, and failures told to the model as an HTTP tool's are.
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { AGENT_DEFAULTS, type AgentTool, type McpTool } from '../../../src/agents/schema.ts';
import { fetchThrough } from '../../../src/net/fetch.ts';
import { ManualTimers, realTimers, type Timers } from '../../../src/timers.ts';
import { TOOL_DEFAULTS, ToolExecutor } from '../../../src/tools/executor.ts';
import { McpCatalog } from '../../../src/tools/mcp/catalog.ts';
import { McpCallTools, MCP_DEFAULTS } from '../../../src/tools/mcp/call-tools.ts';
import { startMcpServer, type TestMcpServer } from '../../helpers/mcp-server.ts';
import { testDispatcher } from '../../support/outbound.ts';

const log = pino({ level: 'silent' });
let server: TestMcpServer | undefined;
let mcp: McpCallTools | undefined;
afterEach(async () => {
  await mcp?.close();
  await server?.close();
  mcp = undefined;
  server = undefined;
});

/** Lets the slow tool answer. */
let releaseSlow: () => void = () => undefined;

function registerTools(s: McpServer): void {
  s.registerTool('echo', { inputSchema: { message: z.string() } }, ({ message }) => ({
    content: [{ type: 'text', text: `Echo: ${message}` }],
  }));
  s.registerTool('weather', { description: 'Weather in a city' }, () => ({
    content: [{ type: 'text', text: 'Mild.' }],
    structuredContent: { temperature: 21, conditions: 'sunny' },
  }));
  s.registerTool('huge', {}, () => ({ content: [{ type: 'text', text: 'é'.repeat(40_000) }] }));
  s.registerTool('refuse', {}, () => ({ content: [{ type: 'text', text: 'No such order.' }], isError: true }));
  s.registerTool(
    'slow',
    {},
    () =>
      new Promise((resolve) => {
        releaseSlow = () => resolve({ content: [{ type: 'text', text: 'late' }] });
      }),
  );
}

async function executorFor(
  extra: Partial<McpTool> = {},
  timers: Timers = realTimers,
  own: AgentTool[] = [],
): Promise<ToolExecutor> {
  server = await startMcpServer(registerTools);
  const tool: McpTool = { type: 'mcp', url: server.url, timeout: AGENT_DEFAULTS.toolTimeoutSeconds, ...extra };
  mcp = await McpCallTools.open({
    servers: [tool],
    ownNames: own.flatMap((t) => ('name' in t ? [t.name] : [])),
    catalog: new McpCatalog(() => 0),
    fetch: fetchThrough(testDispatcher, { maxBodyBytes: MCP_DEFAULTS.maxResponseBytes }),
    timers: realTimers,
    log,
  });
  let t = 4.75;
  return new ToolExecutor([...own, tool], {
    clock: () => (t += 0.25),
    dispatcher: testDispatcher,
    timers,
    mcp,
  });
}

const call = (name: string, args: unknown = {}, id = 'call_1') => ({ id, name, arguments: JSON.stringify(args) });

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
}

describe('an MCP tool called by the model', () => {
  it("is offered to the model beside the agent's own tools, with the server's schema", async () => {
    const tools = await executorFor({ allowed_tools: ['echo'] }, realTimers, [
      { type: 'end_call', name: 'end_call', description: 'Hang up.' },
    ]);
    expect(tools.definitions.map((d) => d.function.name)).toEqual(['end_call', 'echo']);
    expect(tools.definitions[1]!.function.parameters).toMatchObject({
      type: 'object',
      properties: { message: { type: 'string' } },
      required: ['message'],
    });
  });

  it('gives the model the text content and writes the invocation and result into the transcript', async () => {
    const tools = await executorFor();
    const invoked: unknown[] = [];
    const run = await tools.run(call('echo', { message: 'hello' }), undefined, (item) => invoked.push(item));
    expect(run.failure).toBeNull();
    expect(run.modelContent).toBe('Echo: hello');
    expect(invoked).toEqual([run.invocation]);
    expect(run.invocation).toEqual({
      role: 'tool_call_invocation',
      tool_call_id: 'call_1',
      name: 'echo',
      arguments: '{"message":"hello"}',
      start_at: 5,
      end_at: 5,
    });
    expect(run.result).toEqual({
      role: 'tool_call_result',
      tool_call_id: 'call_1',
      content: 'Echo: hello',
      successful: true,
      start_at: 5,
      end_at: 5.25,
    });
    expect(run.latencyMs).not.toBeNull();
  });

  it('adds the structured content as JSON when the text does not carry it', async () => {
    const tools = await executorFor();
    const run = await tools.run(call('weather'));
    expect(run.modelContent).toBe('Mild.\n{"temperature":21,"conditions":"sunny"}');
  });

  it("cuts a long result at an HTTP tool's 16 KiB, without half a character", async () => {
    const tools = await executorFor();
    const run = await tools.run(call('huge'));
    expect(run.failure).toBeNull();
    expect(Buffer.byteLength(run.result.content)).toBe(TOOL_DEFAULTS.maxContentBytes);
    expect(run.result.content).toBe('é'.repeat(TOOL_DEFAULTS.maxContentBytes / 2));
  });

  it("tells the model of a tool's own error (isError) as of a failed HTTP tool", async () => {
    const tools = await executorFor();
    const run = await tools.run(call('refuse'));
    expect(run.failure).toBe('tool_error');
    expect(run.result).toMatchObject({ content: 'No such order.', successful: false });
    expect(run.modelContent).toBe('Tool refuse failed: No such order.');
  });

  it("gives up after the server's timeout and tells the model it timed out", async () => {
    const timers = new ManualTimers();
    const tools = await executorFor({ timeout: 3 }, timers);
    const running = tools.run(call('slow'));
    await until(() => server!.received.some((r) => r.method === 'tools/call'));
    timers.advance(2_999);
    timers.advance(1);
    const run = await running;
    expect(run.failure).toBe('timeout');
    expect(run.modelContent).toBe('Tool slow timed out after 3 s.');
    expect(run.result.successful).toBe(false);
    // The server is told the request was given up.
    await until(() => server!.received.some((r) => r.method === 'notifications/cancelled'));
    releaseSlow();
  });

  it("stops with the turn: a call cut by the turn's signal is reported as cancelled", async () => {
    const tools = await executorFor();
    const turn = new AbortController();
    const running = tools.run(call('slow'), turn.signal);
    await until(() => server!.received.some((r) => r.method === 'tools/call'));
    turn.abort(new Error('turn deadline'));
    const run = await running;
    expect(run.failure).toBe('aborted');
    expect(run.modelContent).toBe('Tool slow was cancelled.');
    releaseSlow();
  });

  it('reports a server gone since the listing as unreachable, naming no socket error', async () => {
    const tools = await executorFor();
    await server!.close();
    const run = await tools.run(call('echo', { message: 'hi' }));
    expect(run.failure).toBe('network');
    expect(run.modelContent).toBe('Tool echo could not be reached.');
  });

  it('checks the arguments against the listed schema before anything is sent', async () => {
    const tools = await executorFor();
    const before = server!.received.length;
    const run = await tools.run(call('echo', { message: 5 }));
    expect(run.failure).toBe('invalid_arguments');
    expect(server!.received).toHaveLength(before);
  });
});
