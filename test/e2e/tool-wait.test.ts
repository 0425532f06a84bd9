// A slow tool on a real phone call: the caller hears "One moment, please." about a second after
// the tool started, not dead air until it answers, and the line is in the transcript between the
// tool's invocation and its result.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import { replyStream, sseHeaders, startServer, type TestServer } from '../support/http-server.ts';
import { agentFinished, fixtureUlaw, placeInboundCall } from '../helpers/phone.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const NUMBER = '+15550100051';
let t: TestService;
let model: TestServer;
let tool: TestServer;

beforeAll(async () => {
  // The model calls the tool on the caller's turn, then answers with its result.
  model = await startServer((_req, res, _body, n) => {
    sseHeaders(res);
    res.end(
      n === 1
        ? replyStream('', [{ id: 'call_1', name: 'order_status', arguments: '{}' }])
        : replyStream('Your order shipped this morning.'),
    );
  });
  tool = await startServer(
    (_req, res) =>
      void setTimeout(
        () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"shipped"}'),
        1_600,
      ),
  );
  t = await startTestService({}, { recogniserLoaded: true });
  const agent = {
    agent_id: 'orders',
    agent_name: 'Orders',
    llm: { base_url: model.url, model: 'm' },
    begin_message: 'Hello.',
    inbound_numbers: [NUMBER],
    tools: [
      { type: 'api', name: 'order_status', url: `${tool.url}/status`, parameters: { type: 'object', properties: {} } },
    ],
  };
  expect((await t.request('POST', '/v2/agents', { body: agent })).status).toBe(201);
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await model?.close();
  await tool?.close();
});

describe('a slow tool on a phone call', () => {
  it('fills the wait with one short line after about a second, kept in the transcript', async () => {
    const { caller, callId } = await placeInboundCall(t.url, NUMBER);
    await agentFinished(caller, { after: 0, timeoutMs: 20_000 });
    const before = caller.played.length;
    await caller.speak(fixtureUlaw('07-what-are-your-opening'));
    await agentFinished(caller, { after: before, quietMs: 2_500, timeoutMs: 30_000 });
    await caller.hangUp();
    let record: CallRecord | undefined;
    for (let i = 0; i < 100 && record?.call_status !== 'ended'; i++) {
      record = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);
      await new Promise((r) => setTimeout(r, 100));
    }
    const items = record!.transcript_with_tool_calls!;
    const at = (match: (i: (typeof items)[number]) => boolean) => items.findIndex(match);
    const invoked = at((i) => i.role === 'tool_call_invocation');
    const filler = at((i) => i.role === 'agent' && i.content === 'One moment, please.');
    const result = at((i) => i.role === 'tool_call_result');
    const answer = at((i) => i.role === 'agent' && i.content === 'Your order shipped this morning.');
    expect(
      [invoked, filler, result, answer].every((i) => i >= 0),
      JSON.stringify(items),
    ).toBe(true);
    expect(invoked).toBeLessThan(filler);
    expect(filler).toBeLessThan(answer);
    // The line starts about a second into the tool's work, well before its 1.6 s answer.
    const started = items[invoked]!.start_at;
    expect(items[filler]!.start_at - started).toBeGreaterThanOrEqual(0.9);
    expect(items[filler]!.start_at).toBeLessThan(items[result]!.end_at);
  }, 60_000);
});
