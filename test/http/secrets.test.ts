// Issue 39, items 3 and 4 on the real service: an address the egress policy refuses, however it
// is spelled, is a 400 naming the field wherever the API takes a URL; secrets are never returned
// and never stored in the clear; records stored in the clear before still load; a wrong
// SECRETS_KEY stops the start.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentConfigSchema } from '../../src/agents/schema.ts';
import { loadConfig } from '../../src/config.ts';
import { startService } from '../../src/app.ts';
import { loadOrCreateSecretsKey, SecretBox, SecretKeyError } from '../../src/secrets/sealed.ts';
import { errorOf, startTestService, type TestService } from '../helpers/service.ts';

const REFUSED_SPELLINGS = [
  '[::127.0.0.1]',
  '[::169.254.169.254]',
  '[::ffff:0:127.0.0.1]',
  '[::ffff:0:169.254.169.254]',
];
const SECRETS = {
  llm: 'sk-llm-plaintext-4f1c',
  voice: 'sk-voice-plaintext-77ab',
  tool: 'tool-header-plaintext-93d0',
  caller: 'sk-caller-plaintext-0c2e',
  judge: 'sk-judge-plaintext-a5b1',
};

let t: TestService;
beforeAll(async () => {
  t = await startTestService({ EGRESS_ALLOW: '' });
}, 60_000);
afterAll(async () => t?.stop());

const agentBody = (fields: Record<string, unknown> = {}) => ({
  agent_name: 'Secrets',
  llm: { base_url: 'https://models.example.com/v1', model: 'm', api_key: SECRETS.llm },
  voice: { engine: 'openai', base_url: 'https://voice.example.com/v1', api_key: SECRETS.voice },
  tools: [{ type: 'api', name: 'book', url: 'https://tools.example.com/book', headers: { 'x-api-key': SECRETS.tool } }],
  ...fields,
});
const testBody = (callerUrl = 'https://caller.example.com/v1', judgeUrl = 'https://judge.example.com/v1') => ({
  name: 'polite',
  caller: {
    persona: 'a customer',
    goal: 'book a table',
    caller_llm: { base_url: callerUrl, model: 'm', api_key: SECRETS.caller },
  },
  expect: {
    judge: { criteria: 'the agent was polite', judge_llm: { base_url: judgeUrl, model: 'm', api_key: SECRETS.judge } },
  },
});
const containsSecret = (text: string) => Object.values(SECRETS).filter((s) => text.includes(s));

describe('URL fields and the egress policy', () => {
  it('answers 400 naming the field for every IPv6 spelling of a loopback or metadata address in an agent', async () => {
    for (const host of REFUSED_SPELLINGS) {
      const cases: [Record<string, unknown>, string][] = [
        [{ llm: { base_url: `http://${host}:11434/v1`, model: 'm' } }, 'body.llm.base_url'],
        [{ tools: [{ type: 'api', name: 'meta', url: `http://${host}/latest/meta-data/` }] }, 'body.tools.0.url'],
      ];
      for (const [fields, field] of cases) {
        const res = await t.request('POST', '/v2/agents', { body: agentBody(fields) });
        expect(res.status, `${field} ${host}`).toBe(400);
        expect(errorOf(res).details).toContain(`${field}: http://`);
      }
    }
  });

  it("answers 400 naming the field for every such spelling in an agent test's caller or judge model, on creation and on change", async () => {
    expect((await t.request('POST', '/v2/agents', { body: { agent_id: 'tested', ...agentBody() } })).status).toBe(201);
    for (const host of REFUSED_SPELLINGS) {
      const caller = await t.request('POST', '/v2/agents/tested/tests', { body: testBody(`http://${host}/v1`) });
      expect(caller.status, host).toBe(400);
      expect(errorOf(caller).details).toContain('body.caller.caller_llm.base_url');
      const judge = await t.request('POST', '/v2/agents/tested/tests', {
        body: testBody(undefined, `http://${host}/v1`),
      });
      expect(judge.status, host).toBe(400);
      expect(errorOf(judge).details).toContain('body.expect.judge.judge_llm.base_url');
    }
    const created = await t.request('POST', '/v2/agents/tested/tests', { body: testBody() });
    expect(created.status, created.text).toBe(201);
    const { test_id } = created.body as { test_id: string };
    const patched = await t.request('PATCH', `/v2/agent-tests/${test_id}`, {
      body: { expect: testBody(undefined, 'http://[::ffff:0:169.254.169.254]/v1').expect },
    });
    expect(patched.status).toBe(400);
    expect(errorOf(patched).details).toContain('body.expect.judge.judge_llm.base_url');
  });
});

describe('secrets', () => {
  it('never returns an api key or tool header: agents and agent tests, created, changed, read and listed', async () => {
    const agent = await t.request('POST', '/v2/agents', { body: { agent_id: 'keeper', ...agentBody() } });
    const test = await t.request('POST', '/v2/agents/keeper/tests', { body: testBody() });
    expect([agent.status, test.status]).toEqual([201, 201]);
    const { test_id } = test.body as { test_id: string };
    const responses = [
      agent,
      test,
      await t.request('GET', '/v2/agents/keeper'),
      await t.request('POST', '/v2/agents/list', { body: {} }),
      await t.request('PATCH', '/v2/agents/keeper', { body: { agent_name: 'Renamed' } }),
      await t.request('GET', `/v2/agent-tests/${test_id}`),
      await t.request('POST', '/v2/agents/keeper/tests/list', { body: {} }),
      await t.request('PATCH', `/v2/agent-tests/${test_id}`, { body: { name: 'renamed' } }),
    ];
    for (const res of responses) {
      expect(res.status, res.text).toBeLessThan(300);
      expect(containsSecret(res.text), res.text).toEqual([]);
      expect(res.text).not.toContain('api_key');
    }
    // The runtime still has them: the stored test opens to what was sent.
    const row = t.service.db!.prepare('SELECT test FROM agent_tests WHERE test_id = ?').get(test_id) as {
      test: string;
    };
    const box = new SecretBox(loadOrCreateSecretsKey(undefined, t.dataDir, () => '').key);
    expect(
      box.open((JSON.parse(row.test) as { caller: { caller_llm: { api_key: string } } }).caller.caller_llm.api_key),
    ).toBe(SECRETS.caller);
  });

  it('marks every secret writeOnly in the OpenAPI document', async () => {
    const doc = (await t.request('GET', '/openapi.json', { key: null })).body as {
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>>;
    };
    const agentSchema = JSON.stringify(doc.paths['/v2/agents']!.post!.requestBody!.content['application/json']!.schema);
    const testSchema = JSON.stringify(
      doc.paths['/v2/agents/{agent_id}/tests']!.post!.requestBody!.content['application/json']!.schema,
    );
    // llm, stt and voice api_key, each again in its section's fallback entries, and the API and MCP tools' headers.
    expect(agentSchema.match(/"writeOnly":true/g)).toHaveLength(8);
    expect(testSchema.match(/"writeOnly":true/g)).toHaveLength(2);
  });

  it('keeps no secret in the clear in the database files', async () => {
    await t.request('POST', '/v2/agents', { body: { agent_id: 'at-rest', ...agentBody() } });
    await t.request('POST', '/v2/agents/at-rest/tests', { body: testBody() });
    t.service.db!.pragma('wal_checkpoint(TRUNCATE)');
    const files = readdirSync(t.dataDir).filter((f) => f.startsWith('voicecall.db'));
    expect(files).toContain('voicecall.db');
    for (const file of files) expect(containsSecret(readFileSync(join(t.dataDir, file), 'latin1')), file).toEqual([]);
    const row = t.service.db!.prepare("SELECT config FROM agent_versions WHERE agent_id = 'at-rest'").get() as {
      config: string;
    };
    expect(JSON.parse(row.config)).toMatchObject({
      llm: { api_key: expect.stringMatching(/^sealed:v1:/) },
      tools: [{ headers: { 'x-api-key': expect.stringMatching(/^sealed:v1:/) } }],
    });
  });
});

describe('records stored in the clear before, and the key', () => {
  it('reads an agent stored in plaintext by the old code, seals it at the next start, and refuses another SECRETS_KEY at start', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'secrets-legacy-'));
    const old = await startTestService({ EGRESS_ALLOW: '' }, { dataDir });
    // As the old code wrote it: the config as JSON, secrets included.
    const legacy = AgentConfigSchema.parse(agentBody());
    old.service
      .db!.prepare(
        'INSERT INTO agent_versions (org_id, agent_id, version, is_published, created_at, config) VALUES (?, ?, 1, 1, ?, ?)',
      )
      .run('acme', 'legacy', 1, JSON.stringify(legacy));
    await old.stop();

    const again = await startTestService({ EGRESS_ALLOW: '' }, { dataDir });
    try {
      const read = await again.request('GET', '/v2/agents/legacy');
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({
        agent_name: 'Secrets',
        llm: { base_url: 'https://models.example.com/v1', model: 'm' },
      });
      expect(containsSecret(read.text)).toEqual([]);
      const row = again.service.db!.prepare("SELECT config FROM agent_versions WHERE agent_id = 'legacy'").get() as {
        config: string;
      };
      expect(containsSecret(row.config)).toEqual([]);
      const box = new SecretBox(loadOrCreateSecretsKey(undefined, dataDir, () => '').key);
      const stored = JSON.parse(row.config) as {
        llm: { api_key: string };
        tools: { headers: Record<string, string> }[];
      };
      expect(box.open(stored.llm.api_key)).toBe(SECRETS.llm);
      expect(box.open(stored.tools[0]!.headers['x-api-key']!)).toBe(SECRETS.tool);
    } finally {
      await again.stop();
    }

    const config = loadConfig({
      PORT: '0',
      DATA_DIR: dataDir,
      API_KEYS: `acme:${'k'.repeat(32)}`,
      LOG_LEVEL: 'silent',
      DEMO: 'off',
      SECRETS_KEY: 'ef'.repeat(32),
    });
    try {
      await expect(startService({ config })).rejects.toThrow(SecretKeyError);
      await expect(startService({ config })).rejects.toThrow(
        /sealed with key [0-9a-f]{8}, but this node's key is [0-9a-f]{8}: give every node the same SECRETS_KEY/,
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
