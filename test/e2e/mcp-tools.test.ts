// MCP tools on a real phone call, against MCP servers nobody here wrote: the npm reference server
// (@modelcontextprotocol/server-everything, in its Streamable HTTP mode, as a child process) and an
// SSE-only server from the official SDK, beside one that cannot be reached. The model is offered
// the allowed tools under unique names, calls one of each real server, their results reach the model
// and the transcript, and the unreachable server costs only its own tools.
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import { startMcpServer, type TestMcpServer } from '../helpers/mcp-server.ts';
import { freePort } from '../helpers/net.ts';
import { agentFinished, fixtureUlaw, placeInboundCall } from '../helpers/phone.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { replyStream, sseHeaders, startServer, type TestServer } from '../support/http-server.ts';

const NUMBER = '+15550100071';
const EVERYTHING = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/dist/index.js');

let t: TestService;
let model: TestServer;
let sseOnly: TestMcpServer;
let everything: ChildProcess;
let everythingUrl: string;
let unreachableUrl: string;

/** Starts the reference server on 127.0.0.1:`port` and resolves once it listens. */
async function startEverything(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    let said = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      said += chunk.toString('utf8');
      if (said.includes('listening on port')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited (${code}): ${said}`)));
  });
  return child;
}

beforeAll(async () => {
  const port = await freePort();
  // The reference server and the service start side by side.
  const starting = startEverything(port);
  const service = startTestService({ METRICS: 'public' }, { recogniserLoaded: true });
  everything = await starting;
  t = await service;
  everythingUrl = `http://127.0.0.1:${port}/mcp`;
  unreachableUrl = `http://127.0.0.1:${await freePort()}/mcp`;
  sseOnly = await startMcpServer((server) => {
    server.registerTool('echo', { description: 'Finds an order', inputSchema: { order: z.string() } }, ({ order }) => ({
      content: [{ type: 'text', text: `Order ${order} shipped this morning.` }],
    }));
  }, 'sse');
  // The model calls one tool of each server on the caller's turn, then answers.
  model = await startServer((_req, res, _body, n) => {
    sseHeaders(res);
    res.end(
      n === 1
        ? replyStream('', [
            { id: 'call_sum', name: 'get-sum', arguments: '{"a":2,"b":3}' },
            { id: 'call_order', name: 'echo_2', arguments: '{"order":"A17"}' },
          ])
        : replyStream('Five, and your order shipped.'),
    );
  });
  const agent = {
    agent_id: 'mcp-agent',
    agent_name: 'MCP',
    llm: { base_url: model.url, model: 'm' },
    begin_message: 'Hello.',
    inbound_numbers: [NUMBER],
    tools: [
      { type: 'mcp', url: everythingUrl, allowed_tools: ['echo', 'get-sum'] },
      { type: 'mcp', url: unreachableUrl },
      { type: 'mcp', url: sseOnly.url },
    ],
  };
  expect((await t.request('POST', '/v2/agents', { body: agent })).status).toBe(201);
}, 60_000);

afterAll(async () => {
  await t?.stop();
  await model?.close();
  await sseOnly?.close();
  everything?.kill();
});

interface ModelRequest {
  tools?: { function: { name: string; description: string; parameters: Record<string, unknown> } }[];
  messages: { role: string; tool_call_id?: string; content: string | null }[];
}

describe('MCP tools on a phone call', () => {
  it("calls the reference server's and an SSE server's tools, the results reaching the model and the transcript", async () => {
    const { caller, callId } = await placeInboundCall(t.url, NUMBER);
    await agentFinished(caller, { after: 0, timeoutMs: 20_000 });
    const before = caller.played.length;
    await caller.speak(fixtureUlaw('07-what-are-your-opening'));
    await agentFinished(caller, { after: before, quietMs: 1_500, timeoutMs: 30_000 });
    await caller.hangUp();
    let record: CallRecord | undefined;
    for (let i = 0; i < 100 && record?.call_status !== 'ended'; i++) {
      record = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);
      await new Promise((r) => setTimeout(r, 100));
    }

    // Offered: the allowed tools of the reference server with its schemas, the SSE server's echo renamed.
    const first = JSON.parse(model.requests[0]!.body) as ModelRequest;
    const offered = new Map(first.tools!.map((tool) => [tool.function.name, tool.function]));
    expect([...offered.keys()].sort()).toEqual(['echo', 'echo_2', 'get-sum']);
    expect(offered.get('get-sum')!.parameters).toMatchObject({
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
    });
    expect(offered.get('echo_2')!.description).toBe('Finds an order');

    // The results went back to the model.
    const second = JSON.parse(model.requests[1]!.body) as ModelRequest;
    const answers = Object.fromEntries(
      second.messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, m.content]),
    );
    expect(answers).toEqual({
      call_sum: 'The sum of 2 and 3 is 5.',
      call_order: 'Order A17 shipped this morning.',
    });

    // And into the transcript, as an HTTP tool's are; the unreachable server did not end the call.
    const items = record!.transcript_with_tool_calls!;
    const tools = items.filter((i) => i.role === 'tool_call_invocation' || i.role === 'tool_call_result');
    expect(tools.map((i) => [i.role, i.tool_call_id])).toEqual(
      expect.arrayContaining([
        ['tool_call_invocation', 'call_sum'],
        ['tool_call_result', 'call_sum'],
        ['tool_call_invocation', 'call_order'],
        ['tool_call_result', 'call_order'],
      ]),
    );
    expect(items.find((i) => i.role === 'tool_call_result' && i.tool_call_id === 'call_sum')).toMatchObject({
      content: 'The sum of 2 and 3 is 5.',
      successful: true,
    });
    expect(items.some((i) => i.role === 'agent' && i.content === 'Five, and your order shipped.')).toBe(true);
    expect(record!.disconnection_reason).toBe('user_hangup');
    expect(t.logs.some((line) => line.includes('an MCP server could not be listed'))).toBe(true);
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(/^voicecall_mcp_servers_unreachable_total 1$/m);
  }, 60_000);
});
