import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BatchAck, BatchResponse, CampaignResponse, ListCampaignsResponse } from '../../src/http/campaign-schemas.ts';
import { CallRecordSchema } from '../../src/records/record.ts';
import { errorOf, startTestService, type TestService } from '../helpers/service.ts';

let t: TestService;
beforeAll(async () => {
  t = await startTestService({ MAX_TASKS: '20', SCHEDULER_POLL_MS: '50' });
});
afterAll(async () => t.stop());

const future = () => new Date(Date.now() + 3_600_000).toISOString();
const campaign = (extra: Record<string, unknown> = {}) => ({
  name: 'Renewals',
  call_from: '+14155550100',
  agent_id: 'demo',
  tasks: [
    { call_to: '+14155550111', metadata: { crm: 1 }, dynamic_variables: { name: 'Ann' } },
    { call_to: '+14155550112' },
  ],
  ...extra,
});

async function create(body: unknown, key?: string) {
  const res = await t.request('POST', '/v2/campaigns', { body, ...(key ? { key } : {}) });
  expect(res.status, res.text).toBe(201);
  return CampaignResponse.strict().parse(res.body);
}

describe('POST /v2/campaigns', () => {
  it('returns the 2.3 campaign: pending, counters at 0, concurrency 5, ISO created_at, integer agent_version, organization_id', async () => {
    const c = await create(campaign());
    expect(c).toMatchObject({
      name: 'Renewals',
      status: 'pending',
      agent_id: 'demo',
      agent_version: 1,
      from_number: '+14155550100',
      total_calls: 2,
      completed_calls: 0,
      failed_calls: 0,
      active_concurrency: 0,
      concurrency: 5,
      organization_id: 'acme',
      presentation_number: null,
      scheduled_at: null,
      finished_at: null,
    });
    expect(c.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('runs the tasks: without a carrier every call fails, the campaign ends fail and each call carries the task data', async () => {
    const c = await create(campaign());
    await vi.waitFor(
      async () =>
        expect(CampaignResponse.parse((await t.request('GET', `/v2/campaigns/${c.id}`)).body).status).toBe('fail'),
      {
        timeout: 5_000,
      },
    );
    const done = CampaignResponse.parse((await t.request('GET', `/v2/campaigns/${c.id}`)).body);
    expect(done).toMatchObject({ failed_calls: 2, completed_calls: 0, active_concurrency: 0 });
    expect(done.finished_at).not.toBeNull();
    const list = await t.request('POST', '/v2/calls/list', {
      body: { filter_criteria: { campaign_id: [c.id] }, sort_order: 'ascending' },
    });
    const calls = (list.body as { calls: unknown[] }).calls.map((x) => CallRecordSchema.parse(x));
    expect(calls).toHaveLength(2);
    const first = calls.find((x) => x.call_to === '+14155550111')!;
    expect(first).toMatchObject({
      campaign_id: c.id,
      metadata: { crm: 1 },
      dynamic_variables: { name: 'Ann' },
      disconnection_reason: 'dial_failed',
    });
  });

  it('keeps a future scheduled_at as draft', async () => {
    const at = future();
    const c = await create(campaign({ scheduled_at: at, concurrency: 2 }));
    expect(c).toMatchObject({ status: 'draft', concurrency: 2, scheduled_at: new Date(at).toISOString() });
  });

  it.each([
    ['call_from not E.164', { call_from: '4155550100' }, 'body.call_from'],
    ['a call_to not E.164', { tasks: [{ call_to: '+1' }] }, 'body.tasks.0.call_to'],
    ['presentation_number not E.164', { presentation_number: 'abc' }, 'body.presentation_number'],
    ['concurrency 0', { concurrency: 0 }, 'body.concurrency'],
    ['concurrency 101', { concurrency: 101 }, 'body.concurrency'],
    ['scheduled_at not ISO 8601', { scheduled_at: 'next tuesday' }, 'body.scheduled_at'],
    ['an unknown key', { colour: 'red' }, 'body.colour'],
    ['an unknown task key', { tasks: [{ call_to: '+14155550111', phone: 'x' }] }, 'body.tasks.0.phone'],
    ['an empty task list', { tasks: [] }, 'body.tasks'],
    [
      'more tasks than MAX_TASKS',
      { tasks: Array.from({ length: 21 }, () => ({ call_to: '+14155550111' })) },
      'at most 20',
    ],
  ])('refuses %s with 400 naming the field', async (_name, change, where) => {
    const res = await t.request('POST', '/v2/campaigns', { body: campaign(change) });
    expect(res.status).toBe(400);
    expect(errorOf(res).details).toContain(where);
  });

  it('refuses an unknown agent with 404', async () => {
    const res = await t.request('POST', '/v2/campaigns', { body: campaign({ agent_id: 'nobody' }) });
    expect(res.status).toBe(404);
    expect(errorOf(res).code).toBe('NOT_FOUND');
  });
});

describe('GET /v2/campaigns/{id} and cancel', () => {
  it('404s an unknown id and a campaign of another organization', async () => {
    expect((await t.request('GET', '/v2/campaigns/campaign_nope')).status).toBe(404);
    const c = await create(campaign({ scheduled_at: future() }));
    expect((await t.request('GET', `/v2/campaigns/${c.id}`, { key: t.keyOf('globex') })).status).toBe(404);
  });

  it('cancels a running campaign and sets finished_at; a second cancel is a 409', async () => {
    const c = await create(campaign({ scheduled_at: future() }));
    const res = await t.request('POST', `/v2/campaigns/${c.id}/cancel`);
    expect(res.status).toBe(200);
    const canceled = CampaignResponse.strict().parse(res.body);
    expect(canceled.status).toBe('canceled');
    expect(canceled.finished_at).not.toBeNull();
    const again = await t.request('POST', `/v2/campaigns/${c.id}/cancel`);
    expect(again.status).toBe(409);
    expect(errorOf(again).code).toBe('CONFLICT');
  });
});

describe('POST /v2/campaigns/list', () => {
  it('pages both orders by created_at with ties by id, with total_count and filters', async () => {
    const key = t.keyOf('filters');
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await create(campaign({ name: `L${i}`, scheduled_at: future() }), key));
    const ids = made.map((c) => c.id);
    const byCreated = [...made]
      .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id))
      .map((c) => c.id);
    for (const order of ['ascending', 'descending'] as const) {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res = await t.request('POST', '/v2/campaigns/list', {
          key,
          body: { sort_order: order, limit: 2, ...(cursor ? { pagination_key: cursor } : {}) },
        });
        expect(res.status).toBe(200);
        const page = ListCampaignsResponse.parse(res.body);
        expect(page.total_count).toBe(5);
        seen.push(...page.campaigns.map((c) => c.id));
        cursor = page.next_cursor;
      } while (cursor);
      expect(seen).toEqual(order === 'ascending' ? byCreated : [...byCreated].reverse());
    }
    await t.request('POST', `/v2/campaigns/${ids[0]}/cancel`, { key });
    const canceled = ListCampaignsResponse.parse(
      (await t.request('POST', '/v2/campaigns/list', { key, body: { filter_criteria: { status: ['canceled'] } } }))
        .body,
    );
    expect(canceled.campaigns.map((c) => c.id)).toEqual([ids[0]]);
    const none = ListCampaignsResponse.parse(
      (
        await t.request('POST', '/v2/campaigns/list', {
          key,
          body: { filter_criteria: { agent_id: ['other'], start_timestamp: { lower_threshold: 0 } } },
        })
      ).body,
    );
    expect(none).toEqual({ campaigns: [], next_cursor: null, total_count: 0 });
    const inWindow = ListCampaignsResponse.parse(
      (
        await t.request('POST', '/v2/campaigns/list', {
          key,
          body: { filter_criteria: { start_timestamp: { lower_threshold: Date.now() + 60_000 } } },
        })
      ).body,
    );
    expect(inWindow.total_count).toBe(5);
  });

  it('refuses unknown filter keys and a malformed pagination_key', async () => {
    const bad = await t.request('POST', '/v2/campaigns/list', { body: { filter_criteria: { colour: ['red'] } } });
    expect(bad.status).toBe(400);
    expect(errorOf(bad).details).toContain('body.filter_criteria.colour');
    const key = await t.request('POST', '/v2/campaigns/list', { body: { pagination_key: 'garbage' } });
    expect(key.status).toBe(400);
    expect(errorOf(key).code).toBe('BAD_PAGINATION_KEY');
  });
});

describe('batches', () => {
  it('acknowledges a batch as queued and reports its progress until it is over', async () => {
    const res = await t.request('POST', '/v1/create-outbound-batch-call', {
      body: {
        name: 'Night',
        call_from: '+14155550100',
        agent_id: 'demo',
        tasks: [{ call_to: '+14155550111', presentation_number: '+14155550199' }, { call_to: '+14155550112' }],
      },
    });
    expect(res.status).toBe(201);
    const ack = BatchAck.strict().parse(res.body);
    expect(ack).toMatchObject({ status: 'queued', total_tasks: 2 });
    await vi.waitFor(
      async () =>
        expect(BatchResponse.parse((await t.request('GET', `/v1/batch-calls/${ack.batch_id}`)).body).status).toBe(
          'failed',
        ),
      {
        timeout: 5_000,
      },
    );
    const batch = BatchResponse.strict().parse((await t.request('GET', `/v1/batch-calls/${ack.batch_id}`)).body);
    expect(batch).toMatchObject({
      batch_id: ack.batch_id,
      name: 'Night',
      total_tasks: 2,
      completed_calls: 0,
      failed_calls: 2,
    });
    expect(batch.call_ids).toHaveLength(2);
    const first = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${batch.call_ids[0]}`)).body);
    expect(first).toMatchObject({ batch_id: ack.batch_id, presentation_number: '+14155550199' });
    expect((await t.request('GET', `/v2/campaigns/${ack.batch_id}`)).status).toBe(404);
  });

  it('validates batch bodies like campaigns and 404s an unknown batch', async () => {
    const bad = await t.request('POST', '/v1/create-outbound-batch-call', {
      body: { name: 'x', call_from: '+14155550100', agent_id: 'demo', tasks: [] },
    });
    expect(bad.status).toBe(400);
    const unknown = await t.request('POST', '/v1/create-outbound-batch-call', {
      body: { name: 'x', call_from: '+14155550100', agent_id: 'demo', tasks: [{ call_to: '+1415' }], concurrency: 3 },
    });
    expect(errorOf(unknown).details).toMatch(
      /body\.tasks\.0\.call_to.*body\.concurrency|body\.concurrency.*body\.tasks\.0\.call_to/,
    );
    expect((await t.request('GET', '/v1/batch-calls/batch_nope')).status).toBe(404);
  });
});
