import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallRecordSchema } from '../../src/records/record.ts';
import { CreateCallAck } from '../../src/http/schemas.ts';
import { errorOf, startTestService, type TestService } from '../helpers/service.ts';

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
});
afterAll(async () => t.stop());

const call = { call_from: '+14155550100', call_to: '+14155550111', agent_id: 'demo' };

describe('POST /v2/calls', () => {
  it('returns the 2.5 acknowledgement with every field and 201', async () => {
    const res = await t.request('POST', '/v2/calls', {
      body: { ...call, metadata: { crm: 7 }, dynamic_variables: { name: 'Ann' } },
    });
    expect(res.status).toBe(201);
    const ack = CreateCallAck.strict().parse(res.body);
    expect(ack).toMatchObject({
      call_from: call.call_from,
      call_to: call.call_to,
      metadata: { crm: 7 },
      dynamic_variables: { name: 'Ann' },
    });
    expect(ack.call_id).toMatch(/^call_[0-9a-f]{32}$/);
  });

  it('without a carrier ends the call at once as not_connected / dial_failed with a readable reason', async () => {
    const res = await t.request('POST', '/v2/calls', { body: call });
    const ack = CreateCallAck.parse(res.body);
    expect(ack.status).toBe('not_connected');
    const record = CallRecordSchema.strict().parse((await t.request('GET', `/v2/calls/${ack.call_id}`)).body);
    expect(record).toMatchObject({
      call_type: 'outbound',
      call_status: 'not_connected',
      disconnection_reason: 'dial_failed',
      duration_ms: 0,
      agent_id: 'demo',
      agent_version: 1,
      start_timestamp: null,
      opt_out_sensitive_data_storage: false,
    });
    expect(record.disconnection_message).toMatch(/carrier/i);
    expect(record.end_timestamp).toBeTypeOf('number');
  });

  it('defaults agent_version to production and resolves "latest" and numbers', async () => {
    const agent = { agent_id: 'versions', agent_name: 'V', llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' } };
    expect((await t.request('POST', '/v2/agents', { body: agent })).status).toBe(201);
    expect((await t.request('PATCH', '/v2/agents/versions', { body: { agent_name: 'V2' } })).status).toBe(200);
    const versionOf = async (agent_version?: string | number) => {
      const res = await t.request('POST', '/v2/calls', {
        body: { ...call, agent_id: 'versions', ...(agent_version === undefined ? {} : { agent_version }) },
      });
      expect(res.status).toBe(201);
      const id = CreateCallAck.parse(res.body).call_id;
      return CallRecordSchema.parse((await t.request('GET', `/v2/calls/${id}`)).body).agent_version;
    };
    expect(await versionOf()).toBe(1);
    expect(await versionOf('production')).toBe(1);
    expect(await versionOf('latest')).toBe(2);
    expect(await versionOf('2')).toBe(2);
    expect(await versionOf(1)).toBe(1);
    const missing = await t.request('POST', '/v2/calls', {
      body: { ...call, agent_id: 'versions', agent_version: '9' },
    });
    expect(missing.status).toBe(404);
    expect(errorOf(missing).details).toMatch(/version 9/);
  });

  it('rejects missing and mistyped fields, naming every offending path', async () => {
    const res = await t.request('POST', '/v2/calls', { body: { call_from: 14155550100, agent_id: 'demo' } });
    expect(res.status).toBe(400);
    const { details, code } = errorOf(res);
    expect(code).toBe('BAD_REQUEST');
    expect(details).toContain('body.call_from');
    expect(details).toContain('body.call_to');
  });

  it('rejects numbers that are not E.164', async () => {
    const res = await t.request('POST', '/v2/calls', { body: { ...call, call_to: '555-1234' } });
    expect(res.status).toBe(400);
    expect(errorOf(res).details).toMatch(/body\.call_to: .*E\.164/);
  });

  it('rejects unknown body keys', async () => {
    const res = await t.request('POST', '/v2/calls', { body: { ...call, from_number: '+14155550100' } });
    expect(res.status).toBe(400);
    expect(errorOf(res).details).toBe('body.from_number: unknown key');
  });

  it('answers an unknown agent with 404', async () => {
    const res = await t.request('POST', '/v2/calls', { body: { ...call, agent_id: 'nobody' } });
    expect(res.status).toBe(404);
    expect(errorOf(res).code).toBe('NOT_FOUND');
  });
});

describe('GET /v2/calls/{call_id}', () => {
  it('answers an unknown id with 404', async () => {
    const res = await t.request('GET', '/v2/calls/call_missing');
    expect(res.status).toBe(404);
    expect(errorOf(res).details).toContain('call_missing');
  });

  it("answers another organization's call with 404, as if it did not exist", async () => {
    const ack = CreateCallAck.parse((await t.request('POST', '/v2/calls', { body: call })).body);
    const res = await t.request('GET', `/v2/calls/${ack.call_id}`, { key: t.keyOf('globex') });
    expect(res.status).toBe(404);
    const list = await t.request('POST', '/v2/calls/list', { key: t.keyOf('globex'), body: {} });
    expect(list.text).not.toContain(ack.call_id);
  });
});
