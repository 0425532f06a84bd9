// The egress policy on a running service with no EGRESS_ALLOW: what an organization may point its
// agent at, and what a call does when a name in its configuration resolves to an internal address.
// Real service, real Twilio media streams, recorded speech through the embedded engines.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import { agentFinished, fixtureUlaw, placeInboundCall } from '../helpers/phone.ts';
import { errorOf, startTestService, type TestService } from '../helpers/service.ts';
import { replyStream, sseHeaders, startServer, type TestServer } from '../support/http-server.ts';

let t: TestService;
/** A model server inside the service's network: no request may reach it. */
let inside: TestServer;

const NUMBERS = { byName: '+15550300001', demo: '+15550300002' };

beforeAll(async () => {
  inside = await startServer((_req, res) => {
    sseHeaders(res);
    res.end(replyStream('You reached the inside.'));
  });
  t = await startTestService({ EGRESS_ALLOW: '' });
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await inside?.close();
});

const agentBody = (fields: Record<string, unknown>) => ({
  agent_name: 'Egress',
  begin_message: 'Hi.',
  llm: { base_url: 'https://models.example.com/v1', model: 'm' },
  ...fields,
});

async function record(callId: string): Promise<CallRecord> {
  for (let i = 0; i < 300; i++) {
    const r = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);
    if (!['registered', 'ongoing'].includes(r.call_status)) return r;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`call ${callId} never ended`);
}

describe('egress policy', () => {
  it('answers 400, naming the field, for an internal or metadata address in an agent', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ llm: { base_url: 'http://127.0.0.1:11434/v1', model: 'm' } }, 'body.llm.base_url'],
      [
        {
          tools: [
            {
              type: 'api',
              name: 'meta',
              description: 'x',
              url: 'http://169.254.169.254/latest/meta-data/',
              method: 'GET',
            },
          ],
        },
        'body.tools.0.url',
      ],
      [{ voice: { engine: 'openai', base_url: 'http://[::1]:8000/v1' } }, 'body.voice.base_url'],
      [{ stt: { engine: 'openai', base_url: 'http://10.0.0.7/v1' } }, 'body.stt.base_url'],
      [
        { tools: [{ type: 'api', name: 'own', description: 'x', url: `${t.url}/v2/calls/list`, method: 'POST' }] },
        'body.tools.0.url',
      ],
    ];
    for (const [fields, field] of cases) {
      const res = await t.request('POST', '/v2/agents', {
        body: { agent_id: `refused-${field.replace(/\W/g, '')}`, ...agentBody(fields) },
      });
      expect(res.status, field).toBe(400);
      expect(errorOf(res).details).toContain(field);
    }
    const created = await t.request('POST', '/v2/agents', { body: { agent_id: 'fine', ...agentBody({}) } });
    expect(created.status).toBe(201);
    const patched = await t.request('PATCH', '/v2/agents/fine', {
      body: { llm: { base_url: 'http://192.168.0.10/v1', model: 'm' } },
    });
    expect(patched.status).toBe(400);
    expect(errorOf(patched).details).toContain('body.llm.base_url');
  });

  it('refuses a name that resolves inside when the call uses it: the record says only that the model could not be reached', async () => {
    const res = await t.request('POST', '/v2/agents', {
      body: {
        agent_id: 'by-name',
        ...agentBody({
          llm: { base_url: `http://localhost:${inside.port}/v1`, model: 'm' },
          inbound_numbers: [NUMBERS.byName],
        }),
      },
    });
    expect(res.status, res.text).toBe(201);
    const { caller, callId } = await placeInboundCall(t.url, NUMBERS.byName);
    await agentFinished(caller, { after: 0, timeoutMs: 20_000, quietMs: 300 });
    await caller.speak(fixtureUlaw('04-yes-please'));
    await caller.waitForClose();
    const r = await record(callId);
    expect(r).toMatchObject({ call_status: 'error', disconnection_reason: 'error_service' });
    expect(r.disconnection_message).toBe('The language model failed: network error talking to the model server.');
    expect(inside.requests).toHaveLength(0);
  }, 60_000);

  it('keeps the demo peer on the service’s own address reachable with no setting', async () => {
    const res = await t.request('POST', '/v2/agents', {
      body: {
        agent_id: 'demo-peer',
        ...agentBody({
          llm: { base_url: `${t.url}/demo/llm/v1`, model: 'demo-front-desk' },
          inbound_numbers: [NUMBERS.demo],
        }),
      },
    });
    expect(res.status, res.text).toBe(201);
    const { caller, callId } = await placeInboundCall(t.url, NUMBERS.demo);
    await agentFinished(caller, { after: 0, timeoutMs: 20_000, quietMs: 300 });
    const greeting = caller.played.length;
    await caller.speak(fixtureUlaw('04-yes-please'));
    await agentFinished(caller, { after: greeting, timeoutMs: 20_000 });
    await caller.hangUp();
    const r = await record(callId);
    expect(r.disconnection_reason).toBe('user_hangup');
    expect(r.transcript!.map((m) => m.role)).toEqual(['agent', 'user', 'agent']);
  }, 60_000);
});
