// Idempotency-Key on the routes that place calls or start campaigns: a client that retries
// after a lost answer gets that answer again, and nothing is placed twice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestService, type TestService } from '../helpers/service.ts';

let t: TestService;
beforeAll(async () => {
  t = await startTestService({ SCHEDULER_POLL_MS: '50' });
});
afterAll(async () => t.stop());

const call = { call_from: '+14155550100', call_to: '+14155550111', agent_id: 'demo' };
const later = () => new Date(Date.now() + 3_600_000).toISOString();
let keys = 0;
const newKey = () => `key-${Date.now()}-${++keys}`;

async function totalCalls(org = 'acme'): Promise<number> {
  return ((await t.request('POST', '/v2/calls/list', { body: {}, key: t.keyOf(org) })).body as { total_count: number })
    .total_count;
}

async function settledCalls(): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 400));
  return totalCalls();
}

async function totalCampaigns(): Promise<number> {
  return ((await t.request('POST', '/v2/campaigns/list', { body: {} })).body as { total_count: number }).total_count;
}

describe('Idempotency-Key', () => {
  const routes: { path: string; body: () => unknown; count: () => Promise<number> }[] = [
    { path: '/v2/calls', body: () => call, count: () => totalCalls() },
    { path: '/v2/web-calls', body: () => ({ agent_id: 'demo' }), count: () => totalCalls() },
    {
      path: '/v2/campaigns',
      body: () => ({
        name: 'Later',
        call_from: call.call_from,
        agent_id: 'demo',
        scheduled_at: later(),
        tasks: [{ call_to: call.call_to }],
      }),
      count: totalCampaigns,
    },
    // A batch starts at once: its one task becomes one call (a second batch would make a second).
    {
      path: '/v1/create-outbound-batch-call',
      body: () => ({ name: 'Batch', call_from: call.call_from, agent_id: 'demo', tasks: [{ call_to: call.call_to }] }),
      count: settledCalls,
    },
  ];

  for (const route of routes) {
    it(`a retry of ${route.path} with the same key returns the first answer and creates nothing`, async () => {
      const key = newKey();
      const body = route.body();
      const before = await route.count();
      const first = await t.request('POST', route.path, { body, headers: { 'idempotency-key': key } });
      expect(first.status, first.text).toBe(201);
      const again = await t.request('POST', route.path, { body, headers: { 'idempotency-key': key } });
      expect(again.status).toBe(201);
      expect(again.body).toEqual(first.body);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      expect(await route.count()).toBe(before + 1);
    });
  }

  it('the same key with a different body is 409 IDEMPOTENCY_KEY_REUSED and creates nothing', async () => {
    const key = newKey();
    expect((await t.request('POST', '/v2/calls', { body: call, headers: { 'idempotency-key': key } })).status).toBe(
      201,
    );
    const before = await totalCalls();
    const other = await t.request('POST', '/v2/calls', {
      body: { ...call, call_to: '+14155550112' },
      headers: { 'idempotency-key': key },
    });
    expect(other.status).toBe(409);
    expect(errorOf(other).code).toBe('IDEMPOTENCY_KEY_REUSED');
    // Another route is another request too.
    const elsewhere = await t.request('POST', '/v2/web-calls', {
      body: { agent_id: 'demo' },
      headers: { 'idempotency-key': key },
    });
    expect(errorOf(elsewhere).code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await totalCalls()).toBe(before);
  });

  it('without a key every request creates a call, as before', async () => {
    const before = await totalCalls();
    await t.request('POST', '/v2/calls', { body: call });
    await t.request('POST', '/v2/calls', { body: call });
    expect(await totalCalls()).toBe(before + 2);
  });

  it('a refused request does not keep its key: the corrected request under the same key is placed', async () => {
    const key = newKey();
    const refused = await t.request('POST', '/v2/calls', {
      body: { ...call, agent_id: 'nobody' },
      headers: { 'idempotency-key': key },
    });
    expect(refused.status).toBe(404);
    const invalid = await t.request('POST', '/v2/calls', {
      body: { ...call, call_to: 'not a number' },
      headers: { 'idempotency-key': key },
    });
    expect(invalid.status).toBe(400);
    const placed = await t.request('POST', '/v2/calls', { body: call, headers: { 'idempotency-key': key } });
    expect(placed.status).toBe(201);
    expect(placed.headers.get('idempotent-replayed')).toBeNull();
  });

  it('keys belong to one organization: another organization with the same key places its own call', async () => {
    const key = newKey();
    const acme = await t.request('POST', '/v2/calls', { body: call, headers: { 'idempotency-key': key } });
    const before = await totalCalls('globex');
    const globex = await t.request('POST', '/v2/calls', {
      body: call,
      key: t.keyOf('globex'),
      headers: { 'idempotency-key': key },
    });
    expect(globex.status).toBe(201);
    expect(globex.headers.get('idempotent-replayed')).toBeNull();
    expect((globex.body as { call_id: string }).call_id).not.toBe((acme.body as { call_id: string }).call_id);
    expect(await totalCalls('globex')).toBe(before + 1);
  });

  it('two requests with one key sent together place one call', async () => {
    const key = newKey();
    const before = await totalCalls();
    const answers = await Promise.all(
      [0, 1, 2].map(() => t.request('POST', '/v2/calls', { body: call, headers: { 'idempotency-key': key } })),
    );
    expect(await totalCalls()).toBe(before + 1);
    const ids = new Set(answers.filter((a) => a.status === 201).map((a) => (a.body as { call_id: string }).call_id));
    expect(ids.size).toBe(1);
    for (const answer of answers.filter((a) => a.status !== 201))
      expect(errorOf(answer).code).toBe('IDEMPOTENCY_IN_PROGRESS');
  });

  it('a key that is empty, too long or not printable ASCII is 400', async () => {
    for (const key of ['', 'x'.repeat(256), 'with space', 'é']) {
      const res = await t.request('POST', '/v2/calls', { body: call, headers: { 'idempotency-key': key } });
      expect(res.status, key).toBe(400);
      expect(errorOf(res).details).toMatch(/Idempotency-Key/);
    }
  });
});
