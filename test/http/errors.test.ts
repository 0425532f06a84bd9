import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.ts';
import { errorOf, startTestService, type TestService } from '../helpers/service.ts';

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
});
afterAll(async () => t.stop());

describe('errors of the service’s own endpoints', () => {
  it('answers malformed JSON with 400 MALFORMED_JSON', async () => {
    const res = await t.request('POST', '/v2/calls/list', {
      raw: '{"limit": 5,',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(errorOf(res).code).toBe('MALFORMED_JSON');
  });

  it('answers an empty JSON body with 400 MALFORMED_JSON', async () => {
    const res = await t.request('POST', '/v2/calls', { raw: '', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(errorOf(res).code).toBe('MALFORMED_JSON');
  });

  it('answers a body that is not JSON with 415', async () => {
    const res = await t.request('POST', '/v2/calls', {
      raw: 'call_to=+1415',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(415);
    expect(errorOf(res).code).toBe('UNSUPPORTED_MEDIA_TYPE');
    const text = await t.request('POST', '/v2/calls', { raw: '{}', headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(415);
  });

  it('answers a body over 1 MiB with 413', async () => {
    const big = JSON.stringify({ filter_criteria: { agent_id: ['x'.repeat(1024 * 1024)] } });
    const res = await t.request('POST', '/v2/calls/list', {
      raw: big,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(413);
    expect(errorOf(res).code).toBe('BODY_TOO_LARGE');
  });

  it('answers an unknown route with 404 in the error shape', async () => {
    const res = await t.request('POST', '/v2/nothing-here', { body: {} });
    expect(res.status).toBe(404);
    expect(errorOf(res).details).toContain('/v2/nothing-here');
  });

  it('answers a missing token with 401 and WWW-Authenticate: Bearer', async () => {
    const res = await t.request('POST', '/v2/calls/list', { body: {}, key: null });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(errorOf(res).code).toBe('UNAUTHORIZED');
  });

  it('answers a wrong token and a malformed header with 401', async () => {
    expect((await t.request('GET', '/v2/calls/x', { key: 'acme-key-0123456780' })).status).toBe(401);
    const basic = await t.request('GET', '/v2/calls/x', {
      key: null,
      headers: { authorization: 'Basic YWNtZTprZXk=' },
    });
    expect(basic.status).toBe(401);
    expect(errorOf(basic).details).toMatch(/Bearer/);
  });

  it('checks the token before reading the body', async () => {
    const res = await t.request('POST', '/v2/calls', {
      raw: '{not json',
      key: null,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(401);
  });

  it('answers an unexpected fault with 500 and no stack trace', async () => {
    const broken = await startTestService();
    broken.service.db!.close();
    const res = await broken.request('GET', '/v2/calls/call_1');
    expect(res.status).toBe(500);
    const body = errorOf(res);
    expect(body.code).toBe('INTERNAL');
    expect(res.text).not.toMatch(/at .*\.ts:\d+/);
    expect(broken.logs.some((l) => l.includes('unexpected error'))).toBe(true);
    await broken.stop();
  });
});

describe('rate limit', () => {
  it('answers requests over the per-minute limit with 429 and Retry-After, per organization', async () => {
    let now = 1_000_000;
    const clock: Clock = { now: () => now };
    const limited = await startTestService({ RATE_LIMIT_PER_MINUTE: '3' }, { clock });
    for (let i = 0; i < 3; i++) expect((await limited.request('POST', '/v2/agents/list')).status).toBe(200);
    const over = await limited.request('POST', '/v2/agents/list');
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('60');
    expect(errorOf(over).code).toBe('RATE_LIMITED');
    expect((await limited.request('POST', '/v2/agents/list', { key: limited.keyOf('globex') })).status).toBe(200);
    now += 60_000;
    expect((await limited.request('POST', '/v2/agents/list')).status).toBe(200);
    await limited.stop();
  });
});

describe('abuse of the API', () => {
  it('answers a body nested deeper than 64 levels with 400 naming where, never 500', async () => {
    const nested = '{"a":'.repeat(5000) + '1' + '}'.repeat(5000);
    const cases: [string, string, string][] = [
      [
        '/v2/calls',
        `{"call_from":"+14155550100","call_to":"+14155550111","agent_id":"demo","metadata":${nested}}`,
        'body.metadata.a.a.a.a.a…',
      ],
      ['/v2/web-calls', `{"agent_id":"demo","dynamic_variables":${nested}}`, 'body.dynamic_variables.a'],
      ['/v2/agents/list', '['.repeat(5000) + ']'.repeat(5000), 'body[][][][][][]…'],
    ];
    for (const [path, raw, where] of cases) {
      const res = await t.request('POST', path, { raw, headers: { 'content-type': 'application/json' } });
      expect(res.status, path).toBe(400);
      expect(errorOf(res)).toMatchObject({ code: 'BAD_REQUEST', details: expect.stringContaining(where) as string });
    }
    const fine = '{"a":'.repeat(60) + '1' + '}'.repeat(60);
    const ok = await t.request('POST', '/v2/calls', {
      raw: `{"call_from":"+14155550100","call_to":"+14155550111","agent_id":"demo","metadata":${fine}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(ok.status).toBe(201);
  });

  it('refuses an address with 429 after 20 failed authentications in a minute, even with a right key, until the minute is over', async () => {
    let now = 1_000_000;
    const clock: Clock = { now: () => now };
    const guarded = await startTestService({}, { clock });
    try {
      for (let i = 0; i < 20; i++)
        expect((await guarded.request('POST', '/v2/agents/list', { key: `wrong-key-${i}` })).status).toBe(401);
      const refused = await guarded.request('POST', '/v2/agents/list', { key: 'wrong-key-x' });
      expect(refused.status).toBe(429);
      expect(errorOf(refused).code).toBe('RATE_LIMITED');
      expect(refused.headers.get('retry-after')).toBe('60');
      expect((await guarded.request('POST', '/v2/agents/list')).status).toBe(429);
      now += 60_000;
      expect((await guarded.request('POST', '/v2/agents/list')).status).toBe(200);
    } finally {
      await guarded.stop();
    }
  });

  it('behind a trusted proxy, failed authentications are counted per client address from X-Forwarded-For', async () => {
    const proxied = await startTestService({ TRUST_PROXY: '127.0.0.1' });
    try {
      const from = (address: string, key?: string) =>
        proxied.request('POST', '/v2/agents/list', {
          ...(key ? { key } : {}),
          headers: { 'x-forwarded-for': address },
        });
      for (let i = 0; i < 20; i++) expect((await from('203.0.113.7', 'wrong-key')).status).toBe(401);
      expect((await from('203.0.113.7', 'wrong-key')).status).toBe(429);
      // Another caller behind the same proxy is not locked out with the guesser.
      expect((await from('198.51.100.2')).status).toBe(200);
    } finally {
      await proxied.stop();
    }
  });

  it('cuts off a request whose body trickles in slower than REQUEST_TIMEOUT_MS with 408', async () => {
    const slow = await startTestService({ REQUEST_TIMEOUT_MS: '1500' });
    try {
      const { port } = new URL(slow.url);
      const started = Date.now();
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), '127.0.0.1', () => {
          socket.write(
            `POST /v2/agents/list HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${slow.keyOf('acme')}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`,
          );
        });
        let received = '';
        const trickle = setInterval(() => socket.write(' '), 300);
        socket.on('data', (chunk) => (received += chunk.toString()));
        socket.on('close', () => {
          clearInterval(trickle);
          resolve(received);
        });
        socket.on('error', reject);
        setTimeout(() => socket.destroy(), 10_000);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 408/);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await slow.stop();
    }
  });
});

describe('shutdown', () => {
  it('answers 503 to API requests and readiness once shutdown began, while liveness stays up', async () => {
    const s = await startTestService();
    expect((await s.request('GET', '/readyz', { key: null })).status).toBe(200);
    s.service.beginShutdown();
    const api = await s.request('POST', '/v2/agents/list');
    expect(api.status).toBe(503);
    expect(errorOf(api).code).toBe('SHUTTING_DOWN');
    expect((await s.request('GET', '/readyz', { key: null })).status).toBe(503);
    expect((await s.request('GET', '/healthz', { key: null })).status).toBe(200);
    await s.stop();
  });
});

describe('logs', () => {
  it('never contain an API key or an LLM api_key', async () => {
    await t.request('POST', '/v2/agents', {
      body: {
        agent_id: 'secretive',
        agent_name: 'S',
        llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm', api_key: 'sk-very-secret-123' },
      },
    });
    await t.request('GET', '/v2/calls/none', { key: 'wrong-key-but-secret-999' });
    t.service.logger.info(
      { llm: { api_key: 'sk-very-secret-123' }, authorization: 'Bearer acme-key-0123456789-0123456789-0123' },
      'probe',
    );
    const all = t.logs.join('\n');
    expect(all).toContain('probe');
    expect(all).not.toContain('sk-very-secret-123');
    expect(all).not.toContain('acme-key-0123456789-0123456789-0123');
    expect(all).not.toContain('wrong-key-but-secret-999');
  });
});
