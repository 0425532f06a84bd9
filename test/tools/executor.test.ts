import { afterEach, describe, expect, it } from 'vitest';
import { AgentConfigSchema, type AgentTool, type ApiTool } from '../../src/agents/schema.ts';
import { ToolExecutor } from '../../src/tools/executor.ts';
import { startServer, type Handler, type TestServer } from '../support/http-server.ts';
import { testDispatcher } from '../support/outbound.ts';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(handler: Handler): Promise<string> {
  server = await startServer(handler);
  return server.url;
}

const json =
  (status: number, body: unknown): Handler =>
  (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

function apiTool(url: string, extra: Partial<ApiTool> = {}): ApiTool {
  return {
    type: 'api',
    name: 'book',
    description: 'Book a slot',
    url,
    method: 'POST',
    timeout: 10,
    parameters: {
      type: 'object',
      properties: {
        name: { type: 'string' },
        time: { type: 'string', nullable: true, example: '9am' },
        count: { type: 'integer', format: 'int32' },
      },
      required: ['name'],
    },
    ...extra,
  };
}

/** A clock that moves 0.25 s each time it is read. */
function steppingClock(start = 12): () => number {
  let t = start - 0.25;
  return () => (t += 0.25);
}

describe('tool definitions', () => {
  it('shows API tools and the built-ins to the model as function tools', () => {
    const agent = AgentConfigSchema.parse({
      agent_name: 'a',
      llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' },
      tools: [
        { type: 'api', name: 'book', url: 'http://127.0.0.1:9/b', description: 'Book' },
        { type: 'end_call' },
        { type: 'transfer_call', transfer_to: '+14155550100' },
      ],
    });
    const ex = new ToolExecutor(agent.tools, { dispatcher: testDispatcher, clock: () => 0 });
    expect(ex.definitions.map((d) => d.function.name)).toEqual(['book', 'end_call', 'transfer_call']);
    expect(ex.definitions[0]).toEqual({
      type: 'function',
      function: { name: 'book', description: 'Book', parameters: { type: 'object', properties: {} } },
    });
    expect(ex.definitions.every((d) => d.type === 'function' && d.function.parameters.type === 'object')).toBe(true);
  });
});

describe('tool executor', () => {
  it('POSTs the arguments as a JSON body with the tool headers and records exact transcript items', async () => {
    const url = await serve(json(200, { confirmation: 'A1' }));
    const ex = new ToolExecutor([apiTool(`${url}/book`, { headers: { 'x-api-key': 'k1' } })], {
      dispatcher: testDispatcher,
      clock: steppingClock(),
    });
    const run = await ex.run({ id: 'call_1', name: 'book', arguments: '{"name":"Ann","time":null}' });
    const sent = server?.requests[0];
    expect(sent?.method).toBe('POST');
    expect(sent?.headers['x-api-key']).toBe('k1');
    expect(sent?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(sent?.body ?? '')).toEqual({ name: 'Ann', time: null });
    expect(run.invocation).toEqual({
      role: 'tool_call_invocation',
      tool_call_id: 'call_1',
      name: 'book',
      arguments: '{"name":"Ann","time":null}',
      start_at: 12,
      end_at: 12,
    });
    expect(run.result).toEqual({
      role: 'tool_call_result',
      tool_call_id: 'call_1',
      content: '{"confirmation":"A1"}',
      successful: true,
      start_at: 12,
      end_at: 12.25,
    });
    expect(run.modelContent).toBe('{"confirmation":"A1"}');
    expect(run.failure).toBeNull();
  });

  it('PUTs the arguments as a JSON body', async () => {
    const url = await serve(json(200, { ok: true }));
    const ex = new ToolExecutor([apiTool(`${url}/x`, { method: 'PUT' })], {
      dispatcher: testDispatcher,
      clock: () => 1,
    });
    await ex.run({ id: 'c', name: 'book', arguments: '{"name":"Bo","count":2}' });
    expect(server?.requests[0]?.method).toBe('PUT');
    expect(JSON.parse(server?.requests[0]?.body ?? '')).toEqual({ name: 'Bo', count: 2 });
  });

  it('sends GET and DELETE arguments as query parameters, keeping the URL query', async () => {
    const url = await serve(json(200, { ok: true }));
    for (const method of ['GET', 'DELETE'] as const) {
      const ex = new ToolExecutor(
        [apiTool(`${url}/slots?site=1`, { method, parameters: { type: 'object', properties: {} } })],
        { dispatcher: testDispatcher, clock: () => 1 },
      );
      const run = await ex.run({ id: 'c', name: 'book', arguments: '{"name":"Ann Lee","count":3,"tags":["a","b"]}' });
      expect(run.result.successful).toBe(true);
    }
    expect(server?.requests.map((r) => [r.method, r.url, r.body])).toEqual([
      ['GET', '/slots?site=1&name=Ann+Lee&count=3&tags=a&tags=b', ''],
      ['DELETE', '/slots?site=1&name=Ann+Lee&count=3&tags=a&tags=b', ''],
    ]);
  });

  it('uses POST when the tool config leaves the method out', async () => {
    const url = await serve(json(200, {}));
    const agent = AgentConfigSchema.parse({
      agent_name: 'a',
      llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' },
      tools: [{ type: 'api', name: 't', url: `${url}/t` }],
    });
    await new ToolExecutor(agent.tools, { dispatcher: testDispatcher, clock: () => 0 }).run({
      id: 'c',
      name: 't',
      arguments: '',
    });
    expect(server?.requests[0]?.method).toBe('POST');
  });

  it('turns a 4xx answer with {error, details} into an unsuccessful result the model can read', async () => {
    const url = await serve(json(409, { error: 'Slot taken', details: 'Try 10am instead' }));
    const ex = new ToolExecutor([apiTool(`${url}/book`)], { dispatcher: testDispatcher, clock: () => 3 });
    const run = await ex.run({ id: 'c', name: 'book', arguments: '{"name":"Ann"}' });
    expect(run.result).toMatchObject({
      successful: false,
      content: '{"error":"Slot taken","details":"Try 10am instead"}',
    });
    expect(run.modelContent).toBe('Tool book failed (HTTP 409): Slot taken. Try 10am instead');
    expect(run.failure).toBe('http_status');
  });

  it('turns a 5xx answer with a plain body into an unsuccessful result', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(503);
      res.end('down for maintenance');
    });
    const run = await new ToolExecutor([apiTool(`${url}/book`)], { dispatcher: testDispatcher, clock: () => 3 }).run({
      id: 'c',
      name: 'book',
      arguments: '{"name":"Ann"}',
    });
    expect(run.result.successful).toBe(false);
    expect(run.modelContent).toBe('Tool book failed (HTTP 503): down for maintenance');
  });

  it('gives up after the tool timeout and says so', async () => {
    const url = await serve(() => undefined);
    const run = await new ToolExecutor([apiTool(`${url}/book`, { timeout: 0.05 })], {
      dispatcher: testDispatcher,
      clock: () => 3,
    }).run({ id: 'c', name: 'book', arguments: '{"name":"Ann"}' });
    expect(run.failure).toBe('timeout');
    expect(run.result).toMatchObject({ successful: false, content: 'Tool book timed out after 0.05 s.' });
  });

  it('stops reading a huge body at the cap and cuts the content at 16 KiB', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const piece = Buffer.alloc(16 * 1024, 'x');
      // Endless body: the test only ends if the executor stops reading.
      const pump = (): void => {
        while (!res.destroyed && res.write(piece));
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    });
    const run = await new ToolExecutor([apiTool(`${url}/book`)], { dispatcher: testDispatcher, clock: () => 3 }).run({
      id: 'c',
      name: 'book',
      arguments: '{"name":"Ann"}',
    });
    expect(run.result.successful).toBe(true);
    expect(run.result.content).toHaveLength(16 * 1024);
    await expect(server?.requestSocketClosed(1)).resolves.toBeUndefined();
  });

  it('reports a refused connection as an unsuccessful result that names no socket error (no port scanning through tools)', async () => {
    const url = await serve(() => undefined);
    await server?.close();
    const run = await new ToolExecutor([apiTool(`${url}/book`)], { dispatcher: testDispatcher, clock: () => 3 }).run({
      id: 'c',
      name: 'book',
      arguments: '{"name":"Ann"}',
    });
    expect(run.failure).toBe('network');
    expect(run.result.successful).toBe(false);
    expect(run.result.content).toBe('Tool book could not be reached.');
  });

  it('rejects arguments that fail the schema or are not JSON without sending a request', async () => {
    const url = await serve(json(200, {}));
    const ex = new ToolExecutor([apiTool(`${url}/book`)], { dispatcher: testDispatcher, clock: () => 3 });
    const missing = await ex.run({ id: 'c', name: 'book', arguments: '{"time":"9am"}' });
    expect(missing.failure).toBe('invalid_arguments');
    expect(missing.result.content).toBe("Invalid arguments for book: / must have required property 'name'");
    const wrongType = await ex.run({ id: 'c', name: 'book', arguments: '{"name":"A","count":"two"}' });
    expect(wrongType.result.content).toBe('Invalid arguments for book: /count must be integer');
    const notJson = await ex.run({ id: 'c', name: 'book', arguments: '{"name":' });
    expect(notJson.result.content).toBe('Invalid arguments for book: arguments are not valid JSON');
    expect(server?.requests).toHaveLength(0);
  });

  it('reports a cancelled request as aborted', async () => {
    const controller = new AbortController();
    const url = await serve(() => controller.abort()); // cancelled once the request is in flight
    const run = await new ToolExecutor([apiTool(`${url}/book`)], { dispatcher: testDispatcher, clock: () => 3 }).run(
      { id: 'c', name: 'book', arguments: '{"name":"Ann"}' },
      controller.signal,
    );
    expect(run.failure).toBe('aborted');
    await expect(server?.requestSocketClosed(1)).resolves.toBeUndefined();
  });

  it('refuses to run a built-in tool over HTTP', async () => {
    const tools: AgentTool[] = [{ type: 'end_call', name: 'end_call', description: 'bye' }];
    const run = await new ToolExecutor(tools, { dispatcher: testDispatcher, clock: () => 3 }).run({
      id: 'c',
      name: 'end_call',
      arguments: '{}',
    });
    expect(run.result.successful).toBe(false);
  });
});
