// SIP trunks through the API on the real service: created, read, changed, deleted and listed within one
// organization; passwords go in and never come out (responses, logs) and are sealed at rest; a number belongs to one
// organization whether a trunk, an agent or a carrier account holds it (409 NUMBER_TAKEN); a malformed body is a 400
// naming the field; the OpenAPI document lists the endpoints with the passwords writeOnly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ListSipTrunksResponse, SipTrunkResponse } from '../../src/sip-trunks/schema.ts';
import { errorOf, startTestService, type TestService } from '../helpers/service.ts';
import { PlivoStandIn } from '../helpers/plivo-standin.ts';

let t: TestService;
/** A carrier account holds numbers too; its credentials are tried at the carrier, here Plivo's stand-in. */
let plivo: PlivoStandIn;
beforeAll(async () => {
  plivo = await new PlivoStandIn().start();
  t = await startTestService({ PLIVO_API_BASE: plivo.url });
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await plivo?.close();
});

let numbers = 0;
/** A number no test has used yet. */
const fresh = () => `+1555060${String(++numbers).padStart(4, '0')}`;

const trunkBody = (nums: string[], extra: Record<string, unknown> = {}) => ({
  name: 'office pbx',
  numbers: nums,
  inbound: { allowed_addresses: ['192.0.2.0/24', '2001:db8::/32'], username: 'pbx', password: 'inbound-secret-71' },
  outbound: { address: 'pbx.example.com:5070', transport: 'tcp', username: 'agent', password: 'outbound-secret-72' },
  ...extra,
});

describe('SIP trunks: create, read, change, delete, list', () => {
  it('creates a trunk with 201 and an id, and never returns or logs its passwords', async () => {
    const number = fresh();
    const res = await t.request('POST', '/v2/sip-trunks', { body: trunkBody([number]) });
    expect(res.status, res.text).toBe(201);
    const trunk = SipTrunkResponse.strict().parse(res.body);
    expect(trunk.sip_trunk_id).toMatch(/^siptrunk_[0-9a-f]{32}$/);
    expect(trunk).toMatchObject({
      name: 'office pbx',
      numbers: [number],
      inbound: { allowed_addresses: ['192.0.2.0/24', '2001:db8::/32'], username: 'pbx' },
      outbound: { address: 'pbx.example.com:5070', transport: 'tcp', username: 'agent' },
    });
    const id = trunk.sip_trunk_id;
    const read = await t.request('GET', `/v2/sip-trunks/${id}`);
    expect(SipTrunkResponse.strict().parse(read.body)).toEqual(trunk);
    const patched = await t.request('PATCH', `/v2/sip-trunks/${id}`, { body: { name: 'renamed', outbound: null } });
    expect(patched.status, patched.text).toBe(200);
    const after = SipTrunkResponse.strict().parse(patched.body);
    expect(after).toMatchObject({ name: 'renamed', numbers: [number] });
    expect(after.outbound).toBeUndefined();
    const listed = await t.request('POST', '/v2/sip-trunks/list', { body: {} });
    expect(ListSipTrunksResponse.parse(listed.body).sip_trunks.map((s) => s.sip_trunk_id)).toContain(id);
    for (const text of [res.text, read.text, patched.text, listed.text]) {
      expect(text).not.toContain('inbound-secret-71');
      expect(text).not.toContain('outbound-secret-72');
      expect(text).not.toContain('password');
    }
    expect(t.logs.filter((line) => line.includes('inbound-secret-71') || line.includes('outbound-secret-72'))).toEqual(
      [],
    );
    const stored = t.service.db!.prepare('SELECT trunk FROM sip_trunks WHERE sip_trunk_id = ?').get(id) as {
      trunk: string;
    };
    expect(stored.trunk).not.toContain('inbound-secret-71');
    expect(stored.trunk).toMatch(/"password":"sealed:v1:/);

    expect((await t.request('DELETE', `/v2/sip-trunks/${id}`)).status).toBe(204);
    expect((await t.request('GET', `/v2/sip-trunks/${id}`)).status).toBe(404);
    expect((await t.request('DELETE', `/v2/sip-trunks/${id}`)).status).toBe(404);
  });

  it('keeps trunks per organization: another organization reads, changes and deletes none of them', async () => {
    const res = await t.request('POST', '/v2/sip-trunks', { body: trunkBody([fresh()]) });
    const id = SipTrunkResponse.parse(res.body).sip_trunk_id;
    const key = t.keyOf('globex');
    expect((await t.request('GET', `/v2/sip-trunks/${id}`, { key })).status).toBe(404);
    expect((await t.request('PATCH', `/v2/sip-trunks/${id}`, { key, body: { name: 'x' } })).status).toBe(404);
    expect((await t.request('DELETE', `/v2/sip-trunks/${id}`, { key })).status).toBe(404);
    const listed = ListSipTrunksResponse.parse(
      (await t.request('POST', '/v2/sip-trunks/list', { key, body: {} })).body,
    );
    expect(listed.sip_trunks.map((s) => s.sip_trunk_id)).not.toContain(id);
  });

  it('pages the list as the other list endpoints do: limit, next_cursor, total_count', async () => {
    const key = t.keyOf('paging-ascending');
    for (let i = 0; i < 3; i++)
      expect(
        (await t.request('POST', '/v2/sip-trunks', { key, body: trunkBody([fresh()], { name: `p${i}` }) })).status,
      ).toBe(201);
    const first = ListSipTrunksResponse.parse(
      (await t.request('POST', '/v2/sip-trunks/list', { key, body: { limit: 2, sort_order: 'ascending' } })).body,
    );
    expect(first.total_count).toBe(3);
    expect(first.sip_trunks.map((s) => s.name)).toEqual(['p0', 'p1']);
    const second = ListSipTrunksResponse.parse(
      (
        await t.request('POST', '/v2/sip-trunks/list', {
          key,
          body: { limit: 2, sort_order: 'ascending', pagination_key: first.next_cursor },
        })
      ).body,
    );
    expect(second.sip_trunks.map((s) => s.name)).toEqual(['p2']);
    expect(second.next_cursor).toBeNull();
  });

  it('refuses a malformed body with 400 {error, details, code} naming the field', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [trunkBody(['5550001']), /body\.numbers/],
      [trunkBody([fresh()], { inbound: { allowed_addresses: ['10.0.0.0/33'] } }), /body\.inbound\.allowed_addresses/],
      [trunkBody([fresh()], { inbound: { allowed_addresses: [] } }), /body\.inbound\.allowed_addresses/],
      [
        trunkBody([fresh()], { inbound: { allowed_addresses: ['192.0.2.1'], username: 'u' } }),
        /body\.inbound\.password/,
      ],
      [trunkBody([fresh()], { outbound: { address: 'pbx example', transport: 'udp' } }), /body\.outbound\.address/],
      [
        trunkBody([fresh()], { outbound: { address: 'pbx.example.com', transport: 'tls' } }),
        /body\.outbound\.transport/,
      ],
      [trunkBody([fresh()], { extra: 1 }), /extra/],
    ];
    for (const [body, details] of cases) {
      const res = await t.request('POST', '/v2/sip-trunks', { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(errorOf(res)).toMatchObject({ code: 'BAD_REQUEST' });
      expect(errorOf(res).error).toEqual(expect.any(String));
      expect(errorOf(res).details, JSON.stringify(body)).toMatch(details);
      expect(res.text).not.toContain('inbound-secret-71');
    }
  });
});

describe('a trunk number belongs to one organization', () => {
  it('409 NUMBER_TAKEN for a number another organization’s trunk, agent or carrier account holds, or another trunk of its own', async () => {
    const onTrunk = fresh();
    const onAgent = fresh();
    const onAccount = fresh();
    expect((await t.request('POST', '/v2/sip-trunks', { body: trunkBody([onTrunk]) })).status).toBe(201);
    const agent = await t.request('POST', '/v2/agents', {
      body: { agent_name: 'desk', llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' }, inbound_numbers: [onAgent] },
    });
    expect(agent.status, agent.text).toBe(201);
    const account = await t.request('POST', '/v2/carrier-accounts', {
      body: {
        carrier: 'plivo',
        name: 'p',
        numbers: [onAccount],
        credentials: { auth_id: plivo.authId, auth_token: plivo.authToken },
      },
    });
    expect(account.status, account.text).toBe(201);
    for (const number of [onTrunk, onAgent, onAccount]) {
      const clash = await t.request('POST', '/v2/sip-trunks', { key: t.keyOf('globex'), body: trunkBody([number]) });
      expect(clash.status).toBe(409);
      expect(errorOf(clash)).toMatchObject({ code: 'NUMBER_TAKEN' });
      expect(errorOf(clash).details).toMatch(/^body\.numbers: .* belongs to another organization/);
    }
    const agentOnTrunk = await t.request('POST', '/v2/agents', {
      key: t.keyOf('globex'),
      body: { agent_name: 'g', llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' }, inbound_numbers: [onTrunk] },
    });
    expect(errorOf(agentOnTrunk).code).toBe('NUMBER_TAKEN');
    const sameOrg = await t.request('POST', '/v2/sip-trunks', { body: trunkBody([onTrunk]) });
    expect(sameOrg.status).toBe(409);
    expect(errorOf(sameOrg).details).toMatch(/already on SIP trunk siptrunk_/);
    // The organization's own agent and account numbers may be put on its trunk.
    expect((await t.request('POST', '/v2/sip-trunks', { body: trunkBody([onAgent, onAccount]) })).status).toBe(201);
  });
});

describe('SIP trunks in the OpenAPI document', () => {
  it('lists the five endpoints, marks both passwords writeOnly, and no response shape has a password', async () => {
    type Operation = {
      requestBody?: { content: Record<string, { schema: unknown }> };
      responses: Record<string, unknown>;
    };
    const doc = (await t.request('GET', '/openapi.json', { key: null })).body as {
      paths: Record<string, Record<string, Operation>>;
    };
    const collection = doc.paths['/v2/sip-trunks']!;
    const one = doc.paths['/v2/sip-trunks/{sip_trunk_id}']!;
    const list = doc.paths['/v2/sip-trunks/list']!;
    expect([collection.post, one.get, one.patch, one.delete, list.post].every(Boolean)).toBe(true);
    const create = JSON.stringify(collection.post!.requestBody!.content['application/json']!.schema);
    expect(create.match(/"writeOnly":true/g)).toHaveLength(2);
    for (const operation of [collection.post!, one.get!, one.patch!, list.post!])
      expect(JSON.stringify(operation.responses)).not.toContain('password');
  });
});
