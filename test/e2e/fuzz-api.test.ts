// Property-based fuzz of the JSON API against one real service with two organizations (the
// "Safe to expose" issue): random and mutated bodies, paths, methods and headers never get a
// 5xx, every refusal is the one error shape, the process keeps serving, and one organization
// never sees or changes another's agents, calls, campaigns or batches.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Clock } from '../../src/clock.ts';
import {
  errorBodyProblem,
  FUZZ_SEED,
  runs,
  headerValueArb,
  jsonArb,
  leaked,
  mutate,
  mutationArb,
  rawRequest,
  type Json,
  type RawRequest,
  type RawResponse,
} from '../helpers/fuzz.ts';
import { freePort } from '../helpers/net.ts';
import { queryStore, startServiceProcess, type ServiceProcess } from '../helpers/service-process.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { WebCallClient } from '../helpers/web-client.ts';

// The service's clock runs ahead by `skew`: the fuzz sends many bad keys on purpose, and the
// per-address limit on failed authentications (20 a minute, then 429 for every request, right
// key or not) would otherwise turn the rest of the run into 429s that test nothing.
let skew = 0;
const clock: Clock = { now: () => Date.now() + skew };
let failedAuths = 0;
function countAuthFailure(res: RawResponse): void {
  if (res.status !== 401) return;
  if (++failedAuths >= 15) {
    skew += 61_000;
    failedAuths = 0;
  }
}
const freshAuthWindow = () => {
  skew += 61_000;
  failedAuths = 0;
};

let t: TestService;
let A: string;
let B: string;
/** In every record and agent of organization A; never in an answer to B. */
const MARKER = 'acme-private-7c1f9e2a';

/** What A made before the fuzz; B must never read or change any of it. */
const a = {
  agentId: 'acme-private-agent',
  callIds: [] as string[],
  campaignId: '',
  batchId: '',
  /** A's call-list cursor: B passing it back must get B's own page or a 400. */
  cursor: '',
  /** Keys A used on POST /v2/web-calls, each with its own body. */
  idempotencyKeys: ['shared-idempotency-key-0001', 'shared-idempotency-key-0002'],
  webCallBody: { agent_id: 'acme-private-agent', metadata: { owner: MARKER } } as Json,
};
const bAgentId = 'globex-own-agent';
/** A's agent that the body fuzz may change at will (A's private agent above must stay as it is). */
const fuzzAgentId = 'acme-fuzz-agent';

const llm = {
  base_url: 'http://127.0.0.1:9/v1',
  model: 'fuzz-model',
  api_key: 'sk-fuzz-secret',
  temperature: 0.5,
  max_tokens: 64,
};
const agentBody = (agentId: string, marker: string): Json => ({
  agent_id: agentId,
  agent_name: `Agent ${marker}`,
  llm,
  system_prompt: `Say ${marker}. Caller {{name}}.`,
  begin_message: `Hello from ${marker}`,
  voice: { engine: 'flite', voice_id: 'slt', speed: 1 },
  stt: { engine: 'pocketsphinx', language: 'en-US', phrases: ['booking'] },
  tools: [
    {
      type: 'api',
      name: 'lookup',
      description: 'Look up',
      url: 'http://127.0.0.1:9/lookup',
      method: 'GET',
      parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
      timeout: 5,
      headers: { 'x-key': 'tool-secret' },
    },
    { type: 'end_call' },
    { type: 'transfer_call', transfer_to: '+14155550199' },
  ],
  inactivity_timeout_ms: 20_000,
  max_duration_ms: 60_000,
  endpointing_ms: 400,
  interruption_sensitivity: 0.3,
  webhook_url: null,
  analysis: {
    summary_prompt: 'Summarize.',
    custom_fields: [{ name: 'booked', type: 'boolean', description: 'booked?' }],
  },
  opt_out_sensitive_data_storage: false,
});

async function api(
  method: string,
  path: string,
  key: string | null,
  body?: Json,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  const h: Record<string, string> = { ...headers };
  if (key !== null) h.authorization = `Bearer ${key}`;
  if (body !== undefined) h['content-type'] ??= 'application/json';
  return rawRequest(t.url, { method, path, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
}

async function created(res: Promise<RawResponse>): Promise<Record<string, unknown>> {
  const r = await res;
  expect(r.status, r.text).toBeLessThan(300);
  return JSON.parse(r.text) as Record<string, unknown>;
}

beforeAll(async () => {
  t = await startTestService({ STREAM_CONNECT_TIMEOUT_MS: '600000' }, { clock });
  A = t.keyOf('acme');
  B = t.keyOf('globex');
  await created(api('POST', '/v2/agents', A, agentBody(a.agentId, MARKER)));
  await created(api('POST', '/v2/agents', A, agentBody(fuzzAgentId, 'fuzz')));
  await created(api('POST', '/v2/agents', B, agentBody(bAgentId, 'globex-own')));
  for (let i = 0; i < 3; i++) {
    const web = await created(
      api('POST', '/v2/web-calls', A, {
        agent_id: a.agentId,
        metadata: { owner: MARKER, n: i },
        dynamic_variables: { name: MARKER },
      }),
    );
    a.callIds.push(String(web.call_id));
  }
  for (const key of a.idempotencyKeys) {
    const idem = await created(api('POST', '/v2/web-calls', A, a.webCallBody, { 'idempotency-key': key }));
    a.callIds.push(String(idem.call_id));
  }
  const outbound = await created(
    api('POST', '/v2/calls', A, {
      call_from: '+14155550100',
      call_to: '+14155550111',
      agent_id: a.agentId,
      metadata: { owner: MARKER },
    }),
  );
  a.callIds.push(String(outbound.call_id));
  const campaign = await created(
    api('POST', '/v2/campaigns', A, {
      name: `Campaign ${MARKER}`,
      call_from: '+14155550100',
      agent_id: a.agentId,
      tasks: [{ call_to: '+14155550112', metadata: { owner: MARKER } }],
      scheduled_at: '2099-01-01T00:00:00Z',
    }),
  );
  a.campaignId = String(campaign.id);
  const batch = await created(
    api('POST', '/v1/create-outbound-batch-call', A, {
      name: `Batch ${MARKER}`,
      call_from: '+14155550100',
      agent_id: a.agentId,
      tasks: [{ call_to: '+14155550113', metadata: { owner: MARKER } }],
    }),
  );
  a.batchId = String(batch.batch_id);
  const page = await created(api('POST', '/v2/calls/list', A, { limit: 1 }));
  a.cursor = String(page.next_cursor);
  await created(api('POST', '/v2/web-calls', B, { agent_id: bAgentId }));
}, 60_000);

afterAll(async () => t?.stop());

/** Every error-level line the service logged since `from` (a 500, an uncaught fault in a handler). */
const errorLogs = (from: number) => t.logs.slice(from).filter((line) => /"level":(50|60)/.test(line));

async function expectHealthy(): Promise<void> {
  const health = await rawRequest(t.url, { method: 'GET', path: '/healthz', headers: {} }, 5_000);
  expect(health.status).toBe(200);
}

/** The rules every answer keeps, whatever was asked. */
function checkAnswer(req: RawRequest, res: RawResponse): void {
  const what = `${req.method} ${req.path} → ${res.status} ${res.text.slice(0, 300)}`;
  expect(res.status, what).toBeGreaterThanOrEqual(100);
  expect(res.status, what).toBeLessThan(500);
  if (res.status >= 400 && req.method !== 'HEAD') {
    // The demo peer (/demo/*) stands in for a customer's model server and answers in that
    // server's shape; every other address is the service's own and uses its one error shape.
    if (req.path.startsWith('/demo/')) expect(() => JSON.parse(res.text) as unknown, what).not.toThrow();
    else expect(errorBodyProblem(res), what).toBeNull();
  }
  if (res.status === 401) expect(String(res.headers['www-authenticate']), what).toMatch(/^Bearer/);
}

// ---------------------------------------------------------------------------------------------
// Generators.

interface RouteCase {
  method: string;
  path: string;
  body: Json | undefined;
}

/** Every body-taking route of the API with a body the spec accepts (checked by the first test). */
/** The agent body with no agent_id: the service names the agent, so no two runs collide. */
function withoutAgentId(body: Json): Json {
  const { agent_id: _id, ...rest } = body as Record<string, Json>;
  return rest;
}

const validCases = (): RouteCase[] => [
  { method: 'POST', path: '/v2/agents', body: withoutAgentId(agentBody('unused', 'fuzz')) },
  {
    method: 'PATCH',
    path: `/v2/agents/${fuzzAgentId}`,
    body: { agent_name: 'Renamed', begin_message: '', llm, tools: [{ type: 'end_call' }], inbound_numbers: [] },
  },
  { method: 'POST', path: `/v2/agents/${fuzzAgentId}/publish`, body: undefined },
  { method: 'POST', path: '/v2/agents/list', body: {} },
  {
    method: 'POST',
    path: '/v2/calls',
    body: {
      call_from: '+14155550100',
      call_to: '+14155550111',
      agent_id: fuzzAgentId,
      agent_version: 'latest',
      metadata: { k: 'v', n: 1 },
      dynamic_variables: { name: 'Ann' },
      presentation_number: null,
    },
  },
  {
    method: 'POST',
    path: '/v2/calls/list',
    body: {
      filter_criteria: {
        agent_id: [fuzzAgentId],
        call_type: ['web', 'outbound'],
        call_status: ['registered'],
        duration_ms: { lower_threshold: 0, upper_threshold: 1000 },
        start_timestamp: { lower_threshold: 0 },
        campaign_id: ['c'],
        batch_id: ['b'],
      },
      sort_order: 'ascending',
      limit: 10,
      pagination_key: null,
    },
  },
  {
    method: 'POST',
    path: '/v1/list-calls',
    body: {
      filter_criteria: {
        agent_id: [fuzzAgentId],
        disconnection_reason: ['dial_failed'],
        user_sentiment: ['positive'],
        call_from: ['+14155550100'],
        duration: { upper_threshold: 5 },
      },
      sort_order: 'descending',
      limit: 50,
    },
  },
  {
    method: 'POST',
    path: '/v2/campaigns',
    body: {
      name: 'Fuzz campaign',
      call_from: '+14155550100',
      agent_id: fuzzAgentId,
      agent_version: '1',
      tasks: [{ call_to: '+14155550114', metadata: { a: 1 }, dynamic_variables: { b: 'c' } }],
      concurrency: 2,
      scheduled_at: '2099-01-01T00:00:00Z',
    },
  },
  {
    method: 'POST',
    path: '/v2/campaigns/list',
    body: {
      filter_criteria: {
        status: ['draft', 'pending'],
        agent_id: [fuzzAgentId],
        start_timestamp: { lower_threshold: 0, upper_threshold: 2 ** 45 },
      },
      sort_order: 'ascending',
      limit: 5,
      pagination_key: null,
    },
  },
  {
    method: 'POST',
    path: '/v1/create-outbound-batch-call',
    body: {
      name: 'Fuzz batch',
      call_from: '+14155550100',
      agent_id: fuzzAgentId,
      tasks: [{ call_to: '+14155550115', presentation_number: null, metadata: {}, dynamic_variables: {} }],
    },
  },
  {
    method: 'POST',
    path: '/v2/web-calls',
    body: { agent_id: fuzzAgentId, agent_version: 1, metadata: { page: 'fuzz' }, dynamic_variables: {} },
  },
];

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json; charset=latin1',
  'application/json;;;',
  'application/json; boundary=x; q=0',
  'application/json; charset=utf-16',
  'application/json; charset="utf-8"',
  'application/vnd.api+json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=----x',
  'text/plain',
  'text/html',
  '*/*',
  '',
  ' ',
  'application/',
];

const authArb = (key: string): fc.Arbitrary<string | undefined> =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constant(`Bearer ${key}`) },
    {
      weight: 4,
      arbitrary: fc.oneof(
        fc.constant(undefined),
        fc.constantFrom(
          '',
          'Bearer',
          'Bearer ',
          `bearer ${key}`,
          `BEARER  ${key}  `,
          `Bearer ${key} extra`,
          `Bearer ${key.slice(0, -1)}`,
          `Bearer ${key}x`,
          `Basic ${Buffer.from(`acme:${key}`).toString('base64')}`,
          `Token ${key}`,
          `Bearer\t${key}`,
          `Bearer ${'k'.repeat(4000)}`,
        ),
        headerValueArb().map((v) => `Bearer ${v}`),
        headerValueArb(),
      ),
    },
  );

/** A header value with UTF-8 bytes on the wire (Node sends header strings as Latin-1). */
const utf8AsLatin1 = (text: string) => Buffer.from(text, 'utf8').toString('latin1');

const idempotencyArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 4, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.uuid() },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      'a b',
      utf8AsLatin1('ключ ✓'),
      'x'.repeat(256),
      'x'.repeat(255),
      ...a.idempotencyKeys,
      '\t',
    ),
  },
  { weight: 1, arbitrary: headerValueArb(300) },
);

const headersArb = (key: string): fc.Arbitrary<Record<string, string>> =>
  fc
    .record({
      authorization: authArb(key),
      contentType: fc.oneof(
        { weight: 5, arbitrary: fc.constant('application/json') },
        { weight: 3, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
        { weight: 1, arbitrary: headerValueArb(40) },
        { weight: 1, arbitrary: fc.constant(undefined) },
      ),
      idempotency: idempotencyArb,
      extra: fc.array(
        fc.tuple(
          fc.constantFrom(
            'accept',
            'accept-encoding',
            'x-forwarded-for',
            'x-twilio-signature',
            'origin',
            'cookie',
            'x-request-id',
            'content-encoding',
            'x-http-method-override',
            'range',
            'if-none-match',
          ),
          headerValueArb(40),
        ),
        { maxLength: 3 },
      ),
    })
    .map(({ authorization, contentType, idempotency, extra }) => {
      const headers: Record<string, string> = {};
      for (const [name, value] of extra) headers[name] = value;
      if (authorization !== undefined) headers.authorization = authorization;
      if (contentType !== undefined) headers['content-type'] = contentType;
      if (idempotency !== undefined) headers['idempotency-key'] = idempotency;
      return headers;
    });

/** A body as bytes on the wire: mutated valid JSON, random JSON, broken text, raw bytes, depth and size extremes. */
const bodyArb = (valid: Json | undefined): fc.Arbitrary<string | Uint8Array | undefined> =>
  fc.oneof(
    {
      weight: 8,
      arbitrary: fc
        .array(mutationArb, { minLength: 1, maxLength: 4 })
        .map((ms) => JSON.stringify(mutate(valid ?? {}, ms))),
    },
    { weight: 2, arbitrary: jsonArb.map((v) => JSON.stringify(v)) },
    {
      weight: 1,
      arbitrary: fc.nat().map((cut) => {
        const text = JSON.stringify(valid ?? {});
        return text.slice(0, cut % Math.max(1, text.length));
      }),
    },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }) },
    {
      weight: 1,
      arbitrary: fc
        .record({ depth: fc.integer({ min: 60, max: 3000 }), open: fc.constantFrom('[', '{"a":', '{"__proto__":') })
        .map(({ depth, open }) => open.repeat(depth) + '1' + (open === '[' ? ']' : '}').repeat(depth)),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '',
        'null',
        'true',
        '0',
        '"x"',
        '[]',
        '{}',
        '{"__proto__":{"polluted":"yes"}}',
        '{"constructor":{"prototype":{"polluted":"yes"}}}',
        '\ufeff{}',
        '{"a":1}{"b":2}',
        '{"a":1,"a":2}',
        'NaN',
        '1e999',
      ),
    },
    { weight: 1, arbitrary: fc.constant(undefined) },
    {
      weight: 1,
      arbitrary: fc
        .dictionary(
          fc.constantFrom('CallSid', 'To', 'From', 'CallStatus', 'AccountSid', '__proto__', 'x'),
          fc.string({ maxLength: 20 }),
        )
        .map((form) => new URLSearchParams(form).toString()),
    },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 1, max: 3 })
        .map((n) => JSON.stringify({ filter_criteria: { agent_id: ['x'.repeat(n * 400 * 1024)] } })),
    },
  );

const ID_LIKE = [
  'demo',
  'call_0',
  'agent_x',
  '..',
  '.',
  '%2e%2e',
  '%2F',
  '%00',
  '%zz',
  '%',
  '%E2%80%AE',
  '%F0%9F%8E%89',
  '~',
  '*',
  'null',
  'undefined',
  '__proto__',
  'constructor',
  'list',
  'x'.repeat(250),
  '1',
  '-1',
  '0x10',
  ';',
  ',',
  '@',
  '!',
  "'",
  '(',
  ')',
  '$',
];

const segmentArb: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...ID_LIKE),
  fc.string({ unit: 'grapheme', maxLength: 20 }).map(encodeURIComponent),
  fc.stringMatching(/^[A-Za-z0-9_.~-]{1,30}$/),
);

const PREFIXES = [
  ...[
    '/v1',
    '/v2',
    '/v2/agents',
    '/v2/agents/list',
    '/v2/calls',
    '/v2/calls/list',
    '/v2/campaigns',
    '/v2/campaigns/list',
    '/v2/web-calls',
    '/v1/batch-calls',
    '/v1/list-calls',
    '/v1/create-outbound-batch-call',
    '/v3',
  ],
  ...[
    '',
    '/healthz',
    '/readyz',
    '/openapi.json',
    '/docs',
    '/web',
    '/web/app.js',
    '/telephony/twilio',
    '/telephony/twilio/voice',
    '/telephony/twilio/status',
    '/media',
    '/media/twilio',
    '/media/web',
  ],
  ...['/demo', '/demo/llm/v1/chat/completions', '/demo/tools/book_appointment'],
];
const SUFFIXES = ['', '', '', '/', '/list', '/publish', '/cancel', '/recording', '//', '/..', '/%2e%2e/v2/agents'];
const QUERIES = [
  '',
  '',
  '',
  '?version=latest',
  '?version=production',
  '?version=0',
  '?version=1&version=2',
  '?version=%00',
  '?version[]=1',
  '?__proto__[polluted]=yes',
  '?constructor[prototype][polluted]=yes',
  '?limit=9999999999',
  '?a',
  '?=',
  '?%zz',
  '#frag',
];

const pathArb: fc.Arbitrary<string> = fc
  .record({
    prefix: fc.constantFrom(...PREFIXES),
    segments: fc.array(fc.oneof(segmentArb, fc.constantFrom(fuzzAgentId, bAgentId)), { maxLength: 3 }),
    suffix: fc.constantFrom(...SUFFIXES),
    query: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...QUERIES) },
      { weight: 1, arbitrary: fc.string({ maxLength: 20 }).map((q) => `?q=${encodeURIComponent(q)}`) },
    ),
  })
  // An origin-form request target always starts with '/' (one that does not never reaches the API).
  .map(
    ({ prefix, segments, suffix, query }) =>
      `/${`${prefix}${segments.map((s) => `/${s}`).join('')}${suffix}${query}`.replace(/^\/+/, '')}`,
  );

const METHODS = [
  'GET',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'HEAD',
  'OPTIONS',
  'TRACE',
  'PROPFIND',
  'MKCOL',
  'LOCK',
  'PURGE',
];

// ---------------------------------------------------------------------------------------------

describe('fuzz of the JSON API (one service, two organizations)', () => {
  it('accepts every unmutated body the fuzz starts from (so the mutations start from valid requests)', async () => {
    freshAuthWindow();
    for (const c of validCases()) {
      const res = await api(c.method, c.path, A, c.body);
      expect(res.status, `${c.method} ${c.path}: ${res.text.slice(0, 300)}`).toBeGreaterThanOrEqual(200);
      expect(res.status, `${c.method} ${c.path}: ${res.text.slice(0, 300)}`).toBeLessThan(300);
    }
  }, 20_000);

  it("organization B, fuzzing reads, lists, changes and creates with A's ids, cursor and Idempotency-Key, never gets A's data and never changes it", async () => {
    freshAuthWindow();
    const aIds = [...a.callIds, a.campaignId, a.batchId];
    const secrets = [MARKER, ...aIds];
    const idArb = fc.oneof(
      fc.constantFrom(...aIds, a.agentId),
      fc.constantFrom(...aIds, a.agentId).map((id) => id.toUpperCase()),
      fc.constantFrom(...aIds, a.agentId).map((id) => encodeURIComponent(`${id} `)),
      fc.constantFrom(...aIds, a.agentId).map((id) => `${id}%00`),
    );
    /** Requests naming one of A's resources directly: B gets 404 and nothing else. */
    const direct = fc
      .tuple(idArb, fc.constantFrom('', '?version=1', '?version=latest', '?version=production'))
      .chain(([id, query]) =>
        fc.constantFrom<RouteCase>(
          { method: 'GET', path: `/v2/agents/${id}${query}`, body: undefined },
          { method: 'PATCH', path: `/v2/agents/${id}`, body: { agent_name: 'hijacked', begin_message: 'hijacked' } },
          { method: 'POST', path: `/v2/agents/${id}/publish`, body: undefined },
          { method: 'GET', path: `/v2/calls/${id}`, body: undefined },
          { method: 'GET', path: `/v2/calls/${id}/recording`, body: undefined },
          { method: 'GET', path: `/v2/campaigns/${id}`, body: undefined },
          { method: 'POST', path: `/v2/campaigns/${id}/cancel`, body: undefined },
          { method: 'GET', path: `/v1/batch-calls/${id}`, body: undefined },
          { method: 'POST', path: '/v2/web-calls', body: { agent_id: id } },
          {
            method: 'POST',
            path: '/v2/calls',
            body: { call_from: '+14155550100', call_to: '+14155550116', agent_id: id },
          },
          {
            method: 'POST',
            path: '/v2/campaigns',
            body: { name: 'x', call_from: '+14155550100', agent_id: id, tasks: [{ call_to: '+14155550117' }] },
          },
          {
            method: 'POST',
            path: '/v1/create-outbound-batch-call',
            body: { name: 'x', call_from: '+14155550100', agent_id: id, tasks: [{ call_to: '+14155550118' }] },
          },
        ),
      );
    /** Lists filtered by A's ids or paged with A's cursor: B's own records only, or a 400. */
    const lists = fc
      .record({
        ids: fc.subarray([...aIds, a.agentId, bAgentId], { minLength: 1 }),
        cursor: fc.constantFrom<string | null | undefined>(
          undefined,
          null,
          a.cursor,
          `${a.cursor}x`,
          a.cursor.slice(0, -2),
        ),
        order: fc.constantFrom('ascending', 'descending'),
        limit: fc.integer({ min: 1, max: 500 }),
      })
      .chain(({ ids, cursor, order, limit }) => {
        const page = { sort_order: order, limit, ...(cursor === undefined ? {} : { pagination_key: cursor }) };
        return fc.constantFrom<RouteCase>(
          {
            method: 'POST',
            path: '/v2/calls/list',
            body: { ...page, filter_criteria: { agent_id: ids, campaign_id: ids, batch_id: ids } },
          },
          { method: 'POST', path: '/v2/calls/list', body: { ...page, filter_criteria: { agent_id: ids } } },
          { method: 'POST', path: '/v2/calls/list', body: page },
          {
            method: 'POST',
            path: '/v1/list-calls',
            body: {
              sort_order: order,
              limit,
              ...(cursor ? { pagination_key: cursor } : {}),
              filter_criteria: { agent_id: ids },
            },
          },
          { method: 'POST', path: '/v2/campaigns/list', body: { ...page, filter_criteria: { agent_id: ids } } },
          { method: 'POST', path: '/v2/agents/list', body: {} },
        );
      });
    /**
     * A's Idempotency-Keys on B's requests: with A's very body B has no such agent (404, so never
     * kept), with a body of its own under A's other key B gets its own call (201, then the replay of
     * that answer of B's); never A's stored answer, never a 409 over A's use of the key.
     */
    const replay = fc.constantFrom<RouteCase & { headers: Record<string, string>; expected: number }>(
      {
        method: 'POST',
        path: '/v2/web-calls',
        body: a.webCallBody,
        headers: { 'idempotency-key': a.idempotencyKeys[0]! },
        expected: 404,
      },
      {
        method: 'POST',
        path: '/v2/web-calls',
        body: { agent_id: bAgentId, metadata: { owner: 'globex' } },
        headers: { 'idempotency-key': a.idempotencyKeys[1]! },
        expected: 201,
      },
    );

    const arb = fc.oneof(
      {
        weight: 4,
        arbitrary: direct.map((c) => ({
          ...c,
          headers: {} as Record<string, string>,
          expected: 404,
          kind: 'direct' as const,
        })),
      },
      {
        weight: 3,
        arbitrary: lists.map((c) => ({
          ...c,
          headers: {} as Record<string, string>,
          expected: 0,
          kind: 'list' as const,
        })),
      },
      { weight: 1, arbitrary: replay.map((c) => ({ ...c, kind: 'replay' as const })) },
    );
    await fc.assert(
      fc.asyncProperty(arb, async (c) => {
        const res = await api(c.method, c.path, B, c.body, c.headers);
        const what = `${c.method} ${c.path} ${JSON.stringify(c.body)} → ${res.status} ${res.text.slice(0, 300)}`;
        checkAnswer({ method: c.method, path: c.path, headers: c.headers, body: undefined }, res);
        // A's private text never reaches B, in any answer.
        expect(leaked(res.text, [MARKER]), what).toEqual([]);
        if (c.kind === 'list') expect([200, 400], what).toContain(res.status);
        // B's request names only A's resource (or an agent id only A has): there is nothing of B's there.
        else expect(res.status, what).toBe(c.expected);
        // A success is B's own data: none of A's ids in it (a 4xx may echo what B itself sent).
        if (res.status < 300) expect(leaked(res.text, secrets), what).toEqual([]);
      }),
      { numRuns: runs(150), seed: FUZZ_SEED },
    );

    // Nothing B did changed A's things.
    const agent = JSON.parse((await api('GET', `/v2/agents/${a.agentId}?version=latest`, A)).text) as Record<
      string,
      unknown
    >;
    expect(agent).toMatchObject({ version: 1, agent_name: `Agent ${MARKER}`, begin_message: `Hello from ${MARKER}` });
    const campaign = JSON.parse((await api('GET', `/v2/campaigns/${a.campaignId}`, A)).text) as Record<string, unknown>;
    expect(campaign.status).toBe('draft');
    for (const id of a.callIds.slice(0, 4)) {
      const call = JSON.parse((await api('GET', `/v2/calls/${id}`, A)).text) as Record<string, unknown>;
      expect(call.call_status, id).toBe('registered');
    }
    const aList = JSON.parse((await api('POST', '/v2/calls/list', A, { limit: 500 })).text) as {
      calls: { call_id: string }[];
    };
    expect(aList.calls.map((c) => c.call_id)).toEqual(expect.arrayContaining(a.callIds));
  }, 50_000);

  it('a mutated body, content type or Idempotency-Key on any API route never gets a 5xx, always the error shape on a 4xx, and leaves the service healthy', async () => {
    const logsFrom = t.logs.length;
    const cases = validCases();
    const arb = fc
      .integer({ min: 0, max: cases.length - 1 })
      .chain((i) =>
        fc.record({ route: fc.constant(cases[i]!), headers: headersArb(A), body: bodyArb(cases[i]!.body) }),
      );
    await fc.assert(
      fc.asyncProperty(arb, async ({ route, headers, body }) => {
        const req: RawRequest = { method: route.method, path: route.path, headers, body };
        const res = await rawRequest(t.url, req);
        countAuthFailure(res);
        checkAnswer(req, res);
        if (res.status === 400 && JSON.parse(res.text).code === 'BAD_REQUEST')
          expect((JSON.parse(res.text) as { details: string }).details.length).toBeGreaterThan(0);
        await expectHealthy();
      }),
      { numRuns: runs(250), seed: FUZZ_SEED },
    );
    expect(errorLogs(logsFrom)).toEqual([]);
    // The bodies carried __proto__ and constructor.prototype keys; nothing reached Object.prototype.
    expect((Object.prototype as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
  }, 50_000);

  it('any method on any path under /v1, /v2 and the public routes, with any headers and body, never gets a 5xx and always the error shape on a 4xx', async () => {
    const logsFrom = t.logs.length;
    const key = fc.constantFrom(A, B);
    const arb = fc.record({
      method: fc.constantFrom(...METHODS),
      path: pathArb,
      headers: key.chain(headersArb),
      body: bodyArb({ limit: 5 }),
    });
    await fc.assert(
      fc.asyncProperty(arb, async ({ method, path, headers, body }) => {
        const req: RawRequest = { method, path, headers, body: method === 'HEAD' ? undefined : body };
        const res = await rawRequest(t.url, req);
        countAuthFailure(res);
        checkAnswer(req, res);
        await expectHealthy();
      }),
      { numRuns: runs(250), seed: FUZZ_SEED },
    );
    expect(errorLogs(logsFrom)).toEqual([]);
    expect((Object.prototype as Record<string, unknown>).polluted).toBeUndefined();
  }, 50_000);

  it('a path the router itself refuses (a malformed %-escape, a parameter over its length limit) and a plain GET of a media WebSocket route still get the error shape', async () => {
    const routes = ['/v1', '/v2/agents', '/v2/calls', '/v2/campaigns', '/v1/batch-calls', '/web', '/v2/nothing'];
    const badEscape = fc.constantFrom('%', '%z', '%zz', '%%', '%E0%A4%A', '%C0%AF', '%ED%A0%80', 'a%', '%0');
    const arb = fc.oneof(
      fc.record({
        method: fc.constantFrom('GET', 'POST', 'DELETE'),
        path: fc.tuple(fc.constantFrom(...routes), badEscape).map(([r, e]) => `${r}/${e}`),
      }),
      fc.record({
        method: fc.constantFrom('GET', 'POST'),
        path: fc
          .tuple(
            fc.constantFrom('/v2/agents', '/v2/calls', '/v2/campaigns', '/v1/batch-calls'),
            fc.integer({ min: 101, max: 400 }),
          )
          .map(([r, n]) => `${r}/${'x'.repeat(n)}`),
      }),
      fc.record({ method: fc.constant('GET'), path: fc.constantFrom('/media/twilio', '/media/web', '/media/web?x=1') }),
    );
    await fc.assert(
      fc.asyncProperty(arb, fc.constantFrom<string | null>(A, null), async ({ method, path }, key) => {
        const req: RawRequest = { method, path, headers: key ? { authorization: `Bearer ${key}` } : {} };
        const res = await rawRequest(t.url, req);
        countAuthFailure(res);
        checkAnswer(req, res);
      }),
      { numRuns: runs(60), seed: FUZZ_SEED },
    );
  }, 20_000);
});

// ---------------------------------------------------------------------------------------------
// WORKERS=2: two service processes on one port. A request about a live call is passed on by the
// worker it reaches to the worker running the call, and must be answered exactly as that worker
// answers it first-hand: with or without a body, for the call's organization and for another.

describe('fuzz of the forwarded live-call routes with WORKERS=2 (a request lands on either worker)', () => {
  const KEY_A = 'fuzz-workers-acme-0123456789-0123456789';
  const KEY_B = 'fuzz-workers-globex-0123456789-01234567';
  const KEY_C = 'fuzz-workers-initech-0123456789-0123456';
  /** Requests an organization may make a minute: well over what A and B send here. */
  const PER_MINUTE = runs(25) * 6 + 60;
  const started: ChildProcess[] = [];
  let service: ServiceProcess;
  let web: WebCallClient;
  let liveCallId = '';

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-fuzz-workers-'));
    service = await startServiceProcess({
      dataDir,
      port: await freePort(),
      key: KEY_A,
      env: {
        WORKERS: '2',
        API_KEYS: `acme:${KEY_A},globex:${KEY_B},initech:${KEY_C}`,
        RATE_LIMIT_PER_MINUTE: String(PER_MINUTE),
      },
      started,
    });
    // Both workers listen and hold a lease (each new connection goes to the next worker).
    await vi.waitFor(
      async () =>
        expect(
          (
            await queryStore<{ n: number }>(
              { dataDir },
              'SELECT count(*) AS n FROM service_nodes WHERE url IS NOT NULL',
            )
          )[0]?.n,
        ).toBe(2),
      { timeout: 30_000, interval: 100 },
    );
    const created = await rawRequest(service.url, {
      method: 'POST',
      path: '/v2/web-calls',
      headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' },
      body: JSON.stringify({ agent_id: 'demo' }),
    });
    expect(created.status, created.text).toBe(201);
    const { call_id, websocket_url, access_token } = JSON.parse(created.text) as {
      call_id: string;
      websocket_url: string;
      access_token: string;
    };
    liveCallId = call_id;
    web = new WebCallClient(websocket_url);
    await web.opened;
    web.send({ type: 'start', access_token });
    await web.waitFor((e) => e.type === 'call_started', 20_000);
  }, 120_000);

  afterAll(() => {
    web?.send({ type: 'hangup' });
    for (const child of started.splice(0)) child.kill('SIGKILL');
  });

  /** The same request twice, each on a connection of its own: the cluster hands them to the two workers by turns. */
  const onBothWorkers = async (req: RawRequest): Promise<[RawResponse, RawResponse]> => [
    await rawRequest(service.url, req),
    await rawRequest(service.url, req),
  ];

  it('any body or none, any content type, from the call’s organization or another, on a live call’s control routes gets the same answer from either worker, never a 5xx, and the error shape on a 4xx', async () => {
    const bodyArb = fc.oneof(
      fc.constant<{ type?: string; body?: string }>({}),
      fc.record({
        type: fc.constant('application/json'),
        body: fc.oneof(
          fc.constant('{"text":"One moment."}'),
          fc.constant('{"content":"a note"}'),
          jsonArb.map((j) => JSON.stringify(j)),
        ),
      }),
      fc.record({
        type: fc.constantFrom('text/plain', 'application/x-www-form-urlencoded'),
        body: fc.constantFrom('text=hi', 'x'),
      }),
    );
    const arb = fc.record({
      org: fc.constantFrom('A', 'B'),
      route: fc.constantFrom('say', 'context', 'end'),
      body: bodyArb,
    });
    await fc.assert(
      fc.asyncProperty(arb, async ({ org, route, body }) => {
        // The call's own organization may not end it: the next runs need it under way.
        fc.pre(!(org === 'A' && route === 'end'));
        const headers: Record<string, string> = { authorization: `Bearer ${org === 'A' ? KEY_A : KEY_B}` };
        if (body.type) headers['content-type'] = body.type;
        const req: RawRequest = { method: 'POST', path: `/v2/calls/${liveCallId}/${route}`, headers, body: body.body };
        const [first, second] = await onBothWorkers(req);
        for (const res of [first, second]) checkAnswer(req, res);
        expect({ status: second.status, text: second.text }, `${org} ${route} ${JSON.stringify(body)}`).toEqual({
          status: first.status,
          text: first.text,
        });
        // Another organization never learns the call exists: its answer is the one for an id no call has.
        if (org === 'B') {
          const ghostId = `call_${'0'.repeat(liveCallId.length - 5)}`;
          const ghost = await rawRequest(service.url, { ...req, path: req.path.replace(liveCallId, ghostId) });
          expect({ status: first.status, text: first.text.replaceAll(liveCallId, 'ID') }).toEqual({
            status: ghost.status,
            text: ghost.text.replaceAll(ghostId, 'ID'),
          });
        }
      }),
      { numRuns: runs(25), seed: FUZZ_SEED },
    );
  }, 40_000);

  it('a request passed on to the worker running the call counts once against its organization’s limit, as one that landed there', async () => {
    const req: RawRequest = {
      method: 'POST',
      path: `/v2/calls/${liveCallId}/end`,
      headers: { authorization: `Bearer ${KEY_C}` },
    };
    const statuses: number[] = [];
    // In tens at once, each on a connection of its own: about half reach the worker not running the call.
    for (let sent = 0; sent < PER_MINUTE; sent += 10) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(10, PER_MINUTE - sent) }, () => rawRequest(service.url, req)),
      );
      statuses.push(...batch.map((r) => r.status));
    }
    expect(statuses.filter((status) => status !== 404)).toEqual([]);
    expect((await rawRequest(service.url, req)).status).toBe(429);
  }, 30_000);

  it('a bodiless POST (README’s curl -X POST …/end, no body, no content type) is answered as the worker running the call answers it, from either worker', async () => {
    const bare = (key: string, route: string): RawRequest => ({
      method: 'POST',
      path: `/v2/calls/${liveCallId}/${route}`,
      headers: { authorization: `Bearer ${key}` },
    });
    // Another organization: 404 from both, as for an id that does not exist.
    const [b1, b2] = await onBothWorkers(bare(KEY_B, 'end'));
    expect([b1.status, b2.status]).toEqual([404, 404]);
    expect(b2.text).toBe(b1.text);
    // A route that needs a body: the same 400 naming the field, from both.
    const [say1, say2] = await onBothWorkers(bare(KEY_A, 'say'));
    expect([say1.status, say2.status], say1.text).toEqual([400, 400]);
    expect(say2.text).toBe(say1.text);
    // A route that needs none ends the call, whichever worker the request reached.
    const end = await rawRequest(service.url, bare(KEY_A, 'end'));
    expect(end.status, end.text).toBe(202);
    await web.closed;
  }, 20_000);
});
