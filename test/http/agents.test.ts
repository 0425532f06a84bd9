import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentResponse, ListAgentsResponse } from '../../src/http/schemas.ts';
import { loadOrCreateSecretsKey, SecretBox } from '../../src/secrets/sealed.ts';
import { errorOf, startTestService, type TestService } from '../helpers/service.ts';

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
});
afterAll(async () => t.stop());

const agent = {
  agent_name: 'Booking line',
  llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm', api_key: 'sk-llm-secret' },
  voice: {
    engine: 'openai',
    voice_id: 'alloy',
    speed: 1,
    base_url: 'http://127.0.0.1:9/v1',
    api_key: 'sk-voice-secret',
  },
  tools: [
    {
      type: 'api',
      name: 'book',
      url: 'http://127.0.0.1:9/book',
      parameters: { type: 'object', properties: { day: { type: 'string' } } },
      headers: { 'x-api-key': 'tool-secret' },
    },
    { type: 'end_call' },
  ],
};

describe('agents', () => {
  it('creates version 1, published, and never returns api_key or tool headers', async () => {
    const res = await t.request('POST', '/v2/agents', { body: agent });
    expect(res.status).toBe(201);
    const created = AgentResponse.parse(res.body);
    expect(created).toMatchObject({ version: 1, is_published: true, agent_name: 'Booking line' });
    expect(created.agent_id).toMatch(/^agent_[0-9a-f]{32}$/);
    expect(res.text).not.toContain('sk-llm-secret');
    expect(res.text).not.toContain('sk-voice-secret');
    expect(res.text).not.toContain('tool-secret');
    const read = await t.request('GET', `/v2/agents/${created.agent_id}`);
    expect(read.text).not.toContain('sk-llm-secret');
    expect(read.text).not.toContain('tool-secret');
  });

  it('refuses a second agent with the same agent_id with 409', async () => {
    expect((await t.request('POST', '/v2/agents', { body: { ...agent, agent_id: 'twice' } })).status).toBe(201);
    const again = await t.request('POST', '/v2/agents', { body: { ...agent, agent_id: 'twice' } });
    expect(again.status).toBe(409);
    expect(errorOf(again).code).toBe('CONFLICT');
  });

  it('PATCH makes the next version unpublished; publish makes the newest production', async () => {
    await t.request('POST', '/v2/agents', { body: { ...agent, agent_id: 'lifecycle' } });
    const patched = AgentResponse.parse(
      (await t.request('PATCH', '/v2/agents/lifecycle', { body: { begin_message: 'Hi there' } })).body,
    );
    expect(patched).toMatchObject({
      version: 2,
      is_published: false,
      begin_message: 'Hi there',
      agent_name: 'Booking line',
    });
    // Fields the change leaves out keep their stored values, defaults included.
    const again = AgentResponse.parse(
      (await t.request('PATCH', '/v2/agents/lifecycle', { body: { inactivity_timeout_ms: 5000 } })).body,
    );
    expect(again).toMatchObject({
      version: 3,
      begin_message: 'Hi there',
      inactivity_timeout_ms: 5000,
      voice: { engine: 'openai' },
    });
    expect(again.tools.map((tool) => tool.type)).toEqual(['api', 'end_call']);
    const production = AgentResponse.parse((await t.request('GET', '/v2/agents/lifecycle?version=production')).body);
    expect(production).toMatchObject({ version: 1, begin_message: '' });
    const latest = AgentResponse.parse((await t.request('GET', '/v2/agents/lifecycle')).body);
    expect(latest.version).toBe(3);
    expect(AgentResponse.parse((await t.request('GET', '/v2/agents/lifecycle?version=1')).body).version).toBe(1);
    const published = AgentResponse.parse((await t.request('POST', '/v2/agents/lifecycle/publish')).body);
    expect(published).toMatchObject({ version: 3, is_published: true });
    expect(AgentResponse.parse((await t.request('GET', '/v2/agents/lifecycle?version=production')).body).version).toBe(
      3,
    );
  });

  it('PATCH keeps the stored api_key when the change does not mention it', async () => {
    await t.request('POST', '/v2/agents', { body: { ...agent, agent_id: 'keeps-key' } });
    await t.request('PATCH', '/v2/agents/keeps-key', { body: { agent_name: 'Renamed' } });
    const row = t.service
      .db!.prepare("SELECT config FROM agent_versions WHERE agent_id = 'keeps-key' AND version = 2")
      .get() as { config: string };
    const stored = JSON.parse(row.config) as { llm: { api_key: string } };
    // Sealed at rest with the key generated into DATA_DIR.
    expect(new SecretBox(loadOrCreateSecretsKey(undefined, t.dataDir, () => '').key).open(stored.llm.api_key)).toBe(
      'sk-llm-secret',
    );
  });

  it('rejects an invalid PATCH with 400 and adds no version', async () => {
    await t.request('POST', '/v2/agents', { body: { ...agent, agent_id: 'strict' } });
    const res = await t.request('PATCH', '/v2/agents/strict', {
      body: { llm: { base_url: 'not a url', model: 'm' }, colour: 'red' },
    });
    expect(res.status).toBe(400);
    expect(errorOf(res).details).toContain('body.colour: unknown key');
    expect(AgentResponse.parse((await t.request('GET', '/v2/agents/strict')).body).version).toBe(1);
  });

  it('rejects an agent with a bad tool (timeout over 120 s) naming the path', async () => {
    const res = await t.request('POST', '/v2/agents', {
      body: { ...agent, tools: [{ type: 'api', name: 'x', url: 'http://127.0.0.1:9/x', timeout: 500 }] },
    });
    expect(res.status).toBe(400);
    expect(errorOf(res).details).toContain('body.tools.0.timeout');
  });

  it('answers unknown agents, unknown versions and another organization’s agents with 404', async () => {
    expect((await t.request('GET', '/v2/agents/nobody')).status).toBe(404);
    expect((await t.request('PATCH', '/v2/agents/nobody', { body: { agent_name: 'x' } })).status).toBe(404);
    expect((await t.request('POST', '/v2/agents/nobody/publish')).status).toBe(404);
    await t.request('POST', '/v2/agents', { body: { ...agent, agent_id: 'mine' } });
    expect((await t.request('GET', '/v2/agents/mine?version=7')).status).toBe(404);
    expect((await t.request('GET', '/v2/agents/mine', { key: t.keyOf('globex') })).status).toBe(404);
    expect(
      (await t.request('PATCH', '/v2/agents/mine', { key: t.keyOf('globex'), body: { agent_name: 'x' } })).status,
    ).toBe(404);
  });

  it('lists the newest version of each agent, the demo agent among them', async () => {
    const list = ListAgentsResponse.parse((await t.request('POST', '/v2/agents/list')).body);
    const ids = list.agents.map((a) => a.agent_id);
    expect(ids).toContain('demo');
    expect(ids).toContain('lifecycle');
    expect(list.agents.find((a) => a.agent_id === 'lifecycle')!.version).toBe(3);
    expect(new Set(ids).size).toBe(ids.length);
    const other = ListAgentsResponse.parse(
      (await t.request('POST', '/v2/agents/list', { key: t.keyOf('globex') })).body,
    );
    expect(other.agents.map((a) => a.agent_id)).toEqual(['demo']);
  });

  it('points the demo agent at this service through PUBLIC_URL', async () => {
    const demo = AgentResponse.parse((await t.request('GET', '/v2/agents/demo')).body);
    expect(demo.llm.base_url).toBe(`${t.service.publicUrl}/demo/llm/v1`);
  });
});

describe('inbound numbers', () => {
  const withNumbers = (agent_id: string, inbound_numbers: string[]) => ({
    body: { ...agent, agent_id, inbound_numbers },
  });

  it('belong to one organization: another organization that lists one gets 409 NUMBER_TAKEN, on create and on patch', async () => {
    expect((await t.request('POST', '/v2/agents', withNumbers('front-desk', ['+15550500001']))).status).toBe(201);
    const taken = await t.request('POST', '/v2/agents', {
      key: t.keyOf('globex'),
      ...withNumbers('thief', ['+15550500001']),
    });
    expect(taken.status).toBe(409);
    expect(errorOf(taken)).toMatchObject({
      code: 'NUMBER_TAKEN',
      details: expect.stringContaining('+15550500001') as string,
    });
    expect(
      (await t.request('POST', '/v2/agents', { key: t.keyOf('globex'), ...withNumbers('thief', []) })).status,
    ).toBe(201);
    const patched = await t.request('PATCH', '/v2/agents/thief', {
      key: t.keyOf('globex'),
      body: { inbound_numbers: ['+15550500001'] },
    });
    expect(patched.status).toBe(409);
    expect(errorOf(patched).code).toBe('NUMBER_TAKEN');
  });

  it('can answer on more than one agent of the organization that holds them', async () => {
    expect((await t.request('POST', '/v2/agents', withNumbers('desk-one', ['+15550500002']))).status).toBe(201);
    expect((await t.request('POST', '/v2/agents', withNumbers('desk-two', ['+15550500002']))).status).toBe(201);
  });

  it('are let go once no version in use lists them: after the change that drops one is published, another organization may take it', async () => {
    expect((await t.request('POST', '/v2/agents', withNumbers('moving', ['+15550500003']))).status).toBe(201);
    expect((await t.request('PATCH', '/v2/agents/moving', { body: { inbound_numbers: [] } })).status).toBe(200);
    // The published version still answers on it.
    expect(
      (await t.request('POST', '/v2/agents', { key: t.keyOf('globex'), ...withNumbers('newcomer', ['+15550500003']) }))
        .status,
    ).toBe(409);
    expect((await t.request('POST', '/v2/agents/moving/publish')).status).toBe(200);
    expect(
      (await t.request('POST', '/v2/agents', { key: t.keyOf('globex'), ...withNumbers('newcomer', ['+15550500003']) }))
        .status,
    ).toBe(201);
  });
});
