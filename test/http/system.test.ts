import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.ts';

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
});
afterAll(async () => t.stop());

describe('system endpoints', () => {
  it('serves /healthz and /readyz without auth', async () => {
    expect(await t.request('GET', '/healthz', { key: null })).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await t.request('GET', '/readyz', { key: null })).toMatchObject({ status: 200, body: { status: 'ready' } });
  });

  it('serves an OpenAPI 3 document built from the route schemas', async () => {
    const res = await t.request('GET', '/openapi.json', { key: null });
    expect(res.status).toBe(200);
    const doc = res.body as {
      openapi: string;
      paths: Record<
        string,
        Record<
          string,
          {
            requestBody?: {
              content: Record<
                string,
                { schema: { properties: Record<string, unknown>; additionalProperties?: boolean } }
              >;
            };
          }
        >
      >;
    };
    expect(doc.openapi).toMatch(/^3\./);
    for (const path of [
      '/v2/calls',
      '/v2/calls/{call_id}',
      '/v2/calls/list',
      '/v1/list-calls',
      '/v2/agents',
      '/v2/agents/{agent_id}',
      '/v2/agents/{agent_id}/publish',
      '/v2/agents/list',
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    const createCall = doc.paths['/v2/calls']!.post!.requestBody!.content['application/json']!.schema;
    expect(Object.keys(createCall.properties)).toEqual(
      expect.arrayContaining([
        'call_from',
        'call_to',
        'agent_id',
        'agent_version',
        'metadata',
        'dynamic_variables',
        'presentation_number',
      ]),
    );
    expect(createCall.additionalProperties).toBe(false);
  });

  it('serves a docs page that needs no outside scripts', async () => {
    const res = await t.request('GET', '/docs', { key: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(res.text).toContain('openapi.json');
    expect(res.text).not.toMatch(/<script[^>]+src=/);
  });
});

describe('what the service keeps on disk and serves publicly', () => {
  it('keeps DATA_DIR and its recordings private to the service’s user (0700), its database and recordings 0600', async () => {
    const { statSync, readdirSync } = await import('node:fs');
    const { join } = await import('node:path');
    const mode = (path: string) => statSync(path).mode & 0o777;
    expect(mode(t.dataDir)).toBe(0o700);
    for (const file of readdirSync(t.dataDir).filter((f) => f.startsWith('voicecall.db')))
      expect(mode(join(t.dataDir, file)), file).toBe(0o600);
    expect(readdirSync(t.dataDir)).toContain('voicecall.db-wal');
  });

  it('with DEMO=off serves no demo peer and loads no demo agent', async () => {
    const off = await startTestService({ DEMO: 'off' });
    try {
      expect((await off.request('POST', '/demo/llm/v1/chat/completions', { key: null, body: {} })).status).toBe(404);
      expect((await off.request('GET', '/v2/agents/demo')).status).toBe(404);
      expect((await t.request('GET', '/v2/agents/demo')).status).toBe(200);
    } finally {
      await off.stop();
    }
  });
});
