import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registeredRecord, type CallRecord } from '../../src/records/record.ts';
import { ListCallsV1Response, ListCallsV2Response } from '../../src/http/schemas.ts';
import { SqliteCallRepository } from '../../src/store/calls.ts';
import { errorOf, startTestService, type TestService } from '../helpers/service.ts';

let t: TestService;
let repo: SqliteCallRepository;
let seq = 0;

/** Stores a call directly, as the call engine would after the call ended. */
function storeCall(org: string, fields: Partial<CallRecord> & { start?: number }): CallRecord {
  seq++;
  const base = registeredRecord({
    call_id: `call_${String(seq).padStart(6, '0')}`,
    agent_id: 'demo',
    agent_version: 1,
    call_type: 'inbound',
    call_from: '+14155550100',
    call_to: '+14155550111',
  });
  const start = fields.start ?? 1_700_000_000_000 + seq * 1000;
  const record: CallRecord = {
    ...base,
    call_status: 'ended',
    start_timestamp: start,
    end_timestamp: start + 5000,
    duration_ms: 5000,
    disconnection_reason: 'user_hangup',
    transcript: [
      { role: 'agent', content: 'Hello', start_at: 0.1, end_at: 0.9 },
      { role: 'user', content: 'Hi', start_at: 1.2, end_at: 1.6 },
    ],
    transcript_with_tool_calls: [{ role: 'agent', content: 'Hello', start_at: 0.1, end_at: 0.9 }],
    ...fields,
  };
  repo.insert(org, record, start);
  return record;
}

beforeAll(async () => {
  t = await startTestService();
  repo = new SqliteCallRepository(t.service.db!);
});
afterAll(async () => t.stop());

async function listV2(body: unknown, org = 'filters') {
  const res = await t.request('POST', '/v2/calls/list', { body, key: t.keyOf(org) });
  return res;
}

describe('POST /v2/calls/list filters', () => {
  // A separate organization keeps these records apart from other tests'.
  beforeAll(() => {
    storeCall('filters', { call_type: 'web', agent_id: 'a1', start: 1000, duration_ms: 1000 });
    storeCall('filters', {
      call_type: 'inbound',
      agent_id: 'a2',
      start: 2000,
      duration_ms: 20_000,
      disconnection_reason: 'inactivity',
    });
    storeCall('filters', {
      call_type: 'outbound',
      agent_id: 'a1',
      start: 3000,
      duration_ms: 60_000,
      call_to: '+14155550199',
      call_analysis: { summary: 's', user_sentiment: 'positive', custom_analysis_data: [] },
      campaign_id: 'camp_1',
    });
    storeCall('filters', {
      call_type: 'outbound',
      agent_id: 'a3',
      start: 4000,
      call_status: 'not_connected',
      disconnection_reason: 'dial_no_answer',
      duration_ms: 0,
      batch_id: 'batch_1',
    });
  });

  const cases: [string, Record<string, unknown>, number[]][] = [
    ['agent_id matches any listed value', { agent_id: ['a1', 'a3'] }, [4000, 3000, 1000]],
    ['call_type', { call_type: ['web', 'inbound'] }, [2000, 1000]],
    ['disconnection_reason', { disconnection_reason: ['dial_no_answer'] }, [4000]],
    ['user_sentiment', { user_sentiment: ['positive'] }, [3000]],
    ['call_to', { call_to: ['+14155550199'] }, [3000]],
    ['call_from', { call_from: ['+14155550100'] }, [4000, 3000, 2000, 1000]],
    ['call_status', { call_status: ['not_connected'] }, [4000]],
    ['campaign_id', { campaign_id: ['camp_1'] }, [3000]],
    ['batch_id', { batch_id: ['batch_1'] }, [4000]],
    [
      'duration range in ms, bounds inclusive',
      { duration: { lower_threshold: 1000, upper_threshold: 20_000 } },
      [2000, 1000],
    ],
    ['duration_ms range', { duration_ms: { lower_threshold: 20_001 } }, [3000]],
    [
      'start_timestamp range, bounds inclusive',
      { start_timestamp: { lower_threshold: 2000, upper_threshold: 3000 } },
      [3000, 2000],
    ],
    ['keys combine with AND', { agent_id: ['a1'], call_type: ['outbound'] }, [3000]],
    ['an empty value list matches nothing', { agent_id: [] }, []],
  ];
  it.each(cases)('filters by %s', async (_name, filter_criteria, starts) => {
    const res = await listV2({ filter_criteria });
    expect(res.status).toBe(200);
    const page = ListCallsV2Response.parse(res.body);
    expect(page.calls.map((c) => c.start_timestamp)).toEqual(starts);
    expect(page.total_count).toBe(starts.length);
  });

  it('sorts ascending when asked, descending by default', async () => {
    const asc = ListCallsV2Response.parse((await listV2({ sort_order: 'ascending' })).body);
    expect(asc.calls.map((c) => c.start_timestamp)).toEqual([1000, 2000, 3000, 4000]);
    const desc = ListCallsV2Response.parse((await listV2({})).body);
    expect(desc.calls.map((c) => c.start_timestamp)).toEqual([4000, 3000, 2000, 1000]);
  });

  it('keeps start_at and end_at on v2 transcript items', async () => {
    const page = ListCallsV2Response.parse((await listV2({ limit: 1 })).body);
    expect(page.calls[0]!.transcript![0]).toEqual({ role: 'agent', content: 'Hello', start_at: 0.1, end_at: 0.9 });
    expect(page.total_count).toBe(4);
    expect(page.next_cursor).toBeTypeOf('string');
  });

  it('rejects unknown filter keys, bad enum values and an out-of-range limit', async () => {
    for (const [body, path] of [
      [{ filter_criteria: { agent: ['a1'] } }, 'body.filter_criteria.agent: unknown key'],
      [{ filter_criteria: { call_type: ['phone_call'] } }, 'body.filter_criteria.call_type.0'],
      [{ filter_criteria: { duration: { lower: 1 } } }, 'body.filter_criteria.duration.lower: unknown key'],
      [{ limit: 0 }, 'body.limit'],
      [{ limit: 501 }, 'body.limit'],
      [{ limit: 2.5 }, 'body.limit'],
      [{ sort_order: 'newest' }, 'body.sort_order'],
    ] as const) {
      const res = await listV2(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(errorOf(res).details).toContain(path);
    }
  });

  it('accepts limit 500 and 1 at the bounds', async () => {
    expect((await listV2({ limit: 500 })).status).toBe(200);
    expect(ListCallsV2Response.parse((await listV2({ limit: 1 })).body).calls).toHaveLength(1);
  });

  it('refuses a malformed pagination key and one issued for another filter', async () => {
    const bad = await listV2({ pagination_key: 'not-a-cursor' });
    expect(bad.status).toBe(400);
    expect(errorOf(bad).code).toBe('BAD_PAGINATION_KEY');
    const first = ListCallsV2Response.parse((await listV2({ limit: 1 })).body);
    const other = await listV2({ limit: 1, pagination_key: first.next_cursor, filter_criteria: { agent_id: ['a1'] } });
    expect(other.status).toBe(400);
    expect(errorOf(other).details).toMatch(/same/);
    const reversed = await listV2({ limit: 1, pagination_key: first.next_cursor, sort_order: 'ascending' });
    expect(reversed.status).toBe(400);
  });
});

describe('POST /v1/list-calls', () => {
  it('serves transcript items with role and content only, and no next key on the last page', async () => {
    const res = await t.request('POST', '/v1/list-calls', {
      key: t.keyOf('filters'),
      body: { limit: 3, filter_criteria: { call_type: ['web'] } },
    });
    expect(res.status).toBe(200);
    const page = ListCallsV1Response.strict().parse(res.body);
    expect(page.calls[0]!.transcript).toEqual([
      { role: 'agent', content: 'Hello' },
      { role: 'user', content: 'Hi' },
    ]);
    expect(page.calls[0]!.transcript_with_tool_calls).toEqual([{ role: 'agent', content: 'Hello' }]);
    expect('next_pagination_key' in page).toBe(false);
  });

  it('pages with next_pagination_key passed back as pagination_key', async () => {
    const seen: unknown[] = [];
    let key: string | undefined;
    do {
      const res = await t.request('POST', '/v1/list-calls', {
        key: t.keyOf('filters'),
        body: { limit: 3, sort_order: 'descending', ...(key ? { pagination_key: key } : {}) },
      });
      const page = ListCallsV1Response.parse(res.body);
      seen.push(...page.calls.map((c) => c.start_timestamp));
      key = page.next_pagination_key;
    } while (key);
    expect(seen).toEqual([4000, 3000, 2000, 1000]);
  });

  it('takes the v1 range filters and rejects v2-only keys', async () => {
    const ok = await t.request('POST', '/v1/list-calls', {
      key: t.keyOf('filters'),
      body: { filter_criteria: { start_timestamp: { upper_threshold: 2000 }, duration: { lower_threshold: 1000 } } },
    });
    expect(ListCallsV1Response.parse(ok.body).calls.map((c) => c.start_timestamp)).toEqual([2000, 1000]);
    const v2only = await t.request('POST', '/v1/list-calls', {
      key: t.keyOf('filters'),
      body: { filter_criteria: { call_status: ['ended'] } },
    });
    expect(v2only.status).toBe(400);
  });
});

describe('keyset paging', () => {
  it.each(['descending', 'ascending'] as const)(
    'finds every call that existed at the first page exactly once while more are inserted (%s, limit 7)',
    async (sort_order) => {
      const org = `paging-${sort_order}`;
      const existing = new Set<string>();
      // Equal start times on purpose: ties must be broken by id without losing rows.
      for (let i = 0; i < 1000; i++) existing.add(storeCall(org, { start: 5_000_000 + Math.floor(i / 3) }).call_id);
      const counts = new Map<string, number>();
      let key: string | null = null;
      let pages = 0;
      let insertedDuring = 0;
      do {
        const res = await t.request('POST', '/v2/calls/list', {
          key: t.keyOf(org),
          body: { limit: 7, sort_order, pagination_key: key },
        });
        expect(res.status).toBe(200);
        const page = ListCallsV2Response.parse(res.body);
        for (const c of page.calls) counts.set(c.call_id, (counts.get(c.call_id) ?? 0) + 1);
        key = page.next_cursor;
        // Newer calls arrive while the client pages, some with the same timestamp as the cursor.
        const last = page.calls.at(-1)?.start_timestamp ?? 5_000_000;
        storeCall(org, { start: 5_000_000 + 400 + pages });
        storeCall(org, { start: last });
        insertedDuring += 2;
        pages++;
      } while (key !== null && pages < 1000);
      for (const id of existing) expect(counts.get(id), id).toBe(1);
      for (const [id, n] of counts) expect(n, id).toBe(1);
      expect(insertedDuring).toBeGreaterThan(200);
    },
    120_000,
  );

  it('reports total_count of the whole filter, ignoring paging', async () => {
    const res = await t.request('POST', '/v2/calls/list', { key: t.keyOf('paging-descending'), body: { limit: 7 } });
    const page = ListCallsV2Response.parse(res.body);
    expect(page.calls).toHaveLength(7);
    expect(page.total_count).toBeGreaterThan(1000);
  });
});
