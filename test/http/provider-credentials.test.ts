// Provider credentials through the API on the real service: created, read, changed, deleted and listed within one
// organization; the api_key goes in and never comes out (responses, the OpenAPI response shapes, logs) and is
// sealed at rest; agents name credentials their organization has, of a provider their engine takes; a credential
// an agent still names is not deleted or renamed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CredentialResponse, ListCredentialsResponse } from '../../src/credentials/schema.ts';
import { AgentResponse } from '../../src/http/schemas.ts';
import { loadOrCreateSecretsKey, SecretBox } from '../../src/secrets/sealed.ts';
import { errorOf, startTestService, type TestService } from '../helpers/service.ts';

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
}, 60_000);
afterAll(async () => t?.stop());

const KEY = 'dg-plaintext-key-5a7e19';
let created = 0;
/** A fresh name per test: names are unique per organization. */
const uniqueName = (prefix: string) => `${prefix}-${++created}`;

async function createCredential(body: Record<string, unknown>, org = 'acme') {
  const res = await t.request('POST', '/v2/provider-credentials', { body, key: t.keyOf(org) });
  expect(res.status, res.text).toBe(201);
  return CredentialResponse.strict().parse(res.body);
}

const llm = { base_url: 'http://127.0.0.1:9/v1', model: 'm' };

describe('provider credentials: create, read, change, delete', () => {
  it('creates one with 201 and an id, and never returns its api_key: not on create, read, change or list', async () => {
    const res = await t.request('POST', '/v2/provider-credentials', {
      body: { provider: 'deepgram', name: uniqueName('dg'), api_key: KEY },
    });
    expect(res.status).toBe(201);
    const credential = CredentialResponse.strict().parse(res.body);
    expect(credential.provider_credential_id).toMatch(/^pcred_[0-9a-f]{32}$/);
    expect(credential).toMatchObject({ provider: 'deepgram', base_url: null });
    expect(credential.created_at).toBe(credential.updated_at);
    const id = credential.provider_credential_id;
    const read = await t.request('GET', `/v2/provider-credentials/${id}`);
    expect(CredentialResponse.strict().parse(read.body)).toEqual(credential);
    const patched = await t.request('PATCH', `/v2/provider-credentials/${id}`, { body: { api_key: `${KEY}-2` } });
    expect(patched.status).toBe(200);
    const listed = await t.request('POST', '/v2/provider-credentials/list', { body: {} });
    for (const text of [res.text, read.text, patched.text, listed.text]) {
      expect(text).not.toContain(KEY);
      expect(text).not.toContain('api_key');
    }
    expect(t.logs.filter((line) => line.includes(KEY))).toEqual([]);
  });

  it('keeps the api_key sealed at rest: the stored row holds no plaintext, and the one key opens it', async () => {
    const { provider_credential_id: id } = await createCredential({
      provider: 'elevenlabs',
      name: uniqueName('el'),
      api_key: KEY,
    });
    const raw = () =>
      (
        t.service.db!.prepare('SELECT * FROM provider_credentials WHERE credential_id = ?').get(id) as Record<
          string,
          unknown
        >
      ).credential as string;
    expect(raw()).not.toContain(KEY);
    const stored = JSON.parse(raw()) as { api_key: string };
    expect(stored.api_key).toMatch(/^sealed:v1:/);
    const box = new SecretBox(loadOrCreateSecretsKey(undefined, t.dataDir, () => '').key);
    expect(box.open(stored.api_key)).toBe(KEY);
    // A rotated key replaces the old one, sealed too.
    await t.request('PATCH', `/v2/provider-credentials/${id}`, { body: { api_key: 'rotated-plaintext-b0' } });
    expect(raw()).not.toContain('rotated-plaintext-b0');
    expect(raw()).not.toContain(stored.api_key);
    expect(box.open((JSON.parse(raw()) as { api_key: string }).api_key)).toBe('rotated-plaintext-b0');
  });

  it('changes name and base_url; base_url null goes back to the provider address; the provider stays', async () => {
    const c = await createCredential({
      provider: 'cartesia',
      name: uniqueName('ca'),
      api_key: KEY,
      base_url: 'wss://cartesia.example.com',
    });
    expect(c.base_url).toBe('wss://cartesia.example.com');
    const path = `/v2/provider-credentials/${c.provider_credential_id}`;
    const renamed = CredentialResponse.parse(
      (await t.request('PATCH', path, { body: { name: `${c.name}-renamed`, base_url: null } })).body,
    );
    expect(renamed).toMatchObject({ name: `${c.name}-renamed`, base_url: null, provider: 'cartesia' });
    const provider = await t.request('PATCH', path, { body: { provider: 'deepgram' } });
    expect(provider.status).toBe(400);
    expect(errorOf(provider).details).toContain('provider');
  });

  it('deletes with 204; then it is 404 to read, change or delete', async () => {
    const { provider_credential_id: id } = await createCredential({
      provider: 'assemblyai',
      name: uniqueName('aai'),
      api_key: KEY,
    });
    const path = `/v2/provider-credentials/${id}`;
    expect((await t.request('DELETE', path)).status).toBe(204);
    for (const [method, body] of [['GET'], ['PATCH', { api_key: 'x' }], ['DELETE']] as const) {
      const res = await t.request(method, path, body ? { body } : {});
      expect(res.status).toBe(404);
      expect(errorOf(res).code).toBe('NOT_FOUND');
    }
    expect(
      t.service.db!.prepare('SELECT count(*) AS n FROM provider_credentials WHERE credential_id = ?').get(id),
    ).toEqual({ n: 0 });
  });
});

describe('provider credentials: what is refused', () => {
  it('answers 400 naming the field for a bad provider, name, key, address or an unknown key', async () => {
    const base = { provider: 'openai', name: uniqueName('bad'), api_key: KEY };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base, provider: 'acme-speech' }, 'body.provider'],
      [{ ...base, name: 'has space' }, 'body.name'],
      [{ ...base, name: '' }, 'body.name'],
      [{ ...base, api_key: '' }, 'body.api_key'],
      [{ ...base, api_key: 'sealed:v1:abcd:xyz' }, 'body.api_key'],
      [{ provider: 'openai', name: base.name }, 'body.api_key'],
      [{ ...base, base_url: 'ftp://files.example.com' }, 'body.base_url'],
      [{ ...base, base_url: 'not a url' }, 'body.base_url'],
      [{ ...base, colour: 'red' }, 'body.colour'],
    ];
    for (const [body, field] of cases) {
      const res = await t.request('POST', '/v2/provider-credentials', { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(errorOf(res).details).toContain(field);
      expect(res.text).not.toContain(KEY);
    }
  });

  it('refuses a base_url the egress policy refuses (a cloud metadata address, any scheme) with 400 naming it; a stand-in on loopback is allowed', async () => {
    for (const url of [
      'http://169.254.169.254/v1',
      'wss://169.254.169.254/v1/listen',
      'ws://[::ffff:169.254.169.254]',
    ]) {
      const res = await t.request('POST', '/v2/provider-credentials', {
        body: { provider: 'deepgram', name: uniqueName('meta'), api_key: KEY, base_url: url },
      });
      expect(res.status, url).toBe(400);
      expect(errorOf(res).details).toMatch(/^body\.base_url: .* egress policy refuses$/);
    }
    const c = await createCredential({
      provider: 'deepgram',
      name: uniqueName('local'),
      api_key: KEY,
      base_url: 'ws://127.0.0.1:8765',
    });
    const patched = await t.request('PATCH', `/v2/provider-credentials/${c.provider_credential_id}`, {
      body: { base_url: 'https://169.254.169.254' },
    });
    expect(patched.status).toBe(400);
    expect(errorOf(patched).details).toContain('body.base_url');
  });

  it('refuses a second credential of the same name in one organization with 409 CREDENTIAL_NAME_TAKEN, on create and rename; another organization may use the name', async () => {
    const name = uniqueName('twice');
    const first = await createCredential({ provider: 'openai', name, api_key: KEY });
    const again = await t.request('POST', '/v2/provider-credentials', {
      body: { provider: 'gemini', name, api_key: 'other' },
    });
    expect(again.status).toBe(409);
    expect(errorOf(again)).toMatchObject({ code: 'CREDENTIAL_NAME_TAKEN' });
    expect(errorOf(again).details).toContain('body.name');
    const second = await createCredential({ provider: 'gemini', name: uniqueName('other'), api_key: KEY });
    const rename = await t.request('PATCH', `/v2/provider-credentials/${second.provider_credential_id}`, {
      body: { name },
    });
    expect(rename.status).toBe(409);
    expect(errorOf(rename).code).toBe('CREDENTIAL_NAME_TAKEN');
    expect((await createCredential({ provider: 'openai', name, api_key: KEY }, 'globex')).name).toBe(name);
    expect(first.name).toBe(name);
  });

  it("keeps organizations apart: another organization's credential is 404 to read, change and delete, and not in its list", async () => {
    const mine = await createCredential({ provider: 'openai', name: uniqueName('mine'), api_key: KEY });
    const path = `/v2/provider-credentials/${mine.provider_credential_id}`;
    const globex = t.keyOf('globex');
    expect((await t.request('GET', path, { key: globex })).status).toBe(404);
    expect((await t.request('PATCH', path, { key: globex, body: { api_key: 'stolen' } })).status).toBe(404);
    expect((await t.request('DELETE', path, { key: globex })).status).toBe(404);
    const theirs = ListCredentialsResponse.parse(
      (await t.request('POST', '/v2/provider-credentials/list', { key: globex, body: { limit: 500 } })).body,
    );
    expect(theirs.provider_credentials.map((c) => c.provider_credential_id)).not.toContain(mine.provider_credential_id);
    // Still there, unchanged, for its own organization.
    expect(CredentialResponse.parse((await t.request('GET', path)).body)).toEqual(mine);
  });
});

describe('provider credentials: lists', () => {
  it('pages by created_at with keyset cursors in both orders, total_count, filters; a cursor of another query or a malformed one is 400', async () => {
    const org = 'paging-ascending';
    const made = [];
    for (let i = 0; i < 5; i++) {
      made.push(
        await createCredential(
          { provider: i % 2 === 0 ? 'deepgram' : 'openai', name: `page-${i}`, api_key: `${KEY}-${i}` },
          org,
        ),
      );
    }
    const key = t.keyOf(org);
    const list = async (body: Record<string, unknown>) => {
      const res = await t.request('POST', '/v2/provider-credentials/list', { key, body });
      expect(res.status, res.text).toBe(200);
      expect(res.text).not.toContain(KEY);
      return ListCredentialsResponse.strict().parse(res.body);
    };
    for (const sort_order of ['ascending', 'descending'] as const) {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page = await list({ sort_order, limit: 2, ...(cursor ? { pagination_key: cursor } : {}) });
        expect(page.total_count).toBe(5);
        expect(page.provider_credentials.length).toBeLessThanOrEqual(2);
        seen.push(...page.provider_credentials.map((c) => c.provider_credential_id));
        cursor = page.next_cursor;
      } while (cursor);
      // Made in one millisecond or several: ties go by id, in the same order.
      const expected = [...made]
        .sort((a, b) => a.created_at - b.created_at || a.provider_credential_id.localeCompare(b.provider_credential_id))
        .map((c) => c.provider_credential_id);
      expect(seen).toEqual(sort_order === 'ascending' ? expected : expected.reverse());
    }
    const deepgram = await list({ filter_criteria: { provider: ['deepgram'] } });
    expect(deepgram.total_count).toBe(3);
    expect(deepgram.provider_credentials.every((c) => c.provider === 'deepgram')).toBe(true);
    expect((await list({ filter_criteria: { name: ['page-1', 'page-4'] } })).total_count).toBe(2);

    const first = await list({ limit: 2 });
    const other = await t.request('POST', '/v2/provider-credentials/list', {
      key,
      body: { limit: 2, sort_order: 'ascending', pagination_key: first.next_cursor },
    });
    expect(other.status).toBe(400);
    expect(errorOf(other).code).toBe('BAD_PAGINATION_KEY');
    const malformed = await t.request('POST', '/v2/provider-credentials/list', {
      key,
      body: { pagination_key: '%%%' },
    });
    expect(errorOf(malformed).code).toBe('BAD_PAGINATION_KEY');
    const typo = await t.request('POST', '/v2/provider-credentials/list', {
      key,
      body: { filter_criteria: { provder: ['openai'] } },
    });
    expect(typo.status).toBe(400);
  });
});

describe('agents name provider credentials', () => {
  it('takes stt, voice and llm credentials of the providers their engines take, and shows the names, never a key', async () => {
    const openai = await createCredential({ provider: 'openai', name: uniqueName('oa'), api_key: KEY });
    const res = await t.request('POST', '/v2/agents', {
      body: {
        agent_name: 'Named',
        llm: { ...llm, credential: openai.name },
        stt: { engine: 'openai', base_url: 'http://127.0.0.1:9/v1', credential: openai.name },
        voice: { engine: 'openai', credential: openai.name },
      },
    });
    expect(res.status, res.text).toBe(201);
    const agent = AgentResponse.parse(res.body);
    expect(agent.llm.credential).toBe(openai.name);
    expect(agent.stt.credential).toBe(openai.name);
    expect(agent.voice.credential).toBe(openai.name);
    expect(res.text).not.toContain(KEY);
  });

  it("answers 400 naming the field when an agent names a credential its organization does not have (another organization's included)", async () => {
    const theirs = await createCredential({ provider: 'openai', name: uniqueName('theirs'), api_key: KEY }, 'globex');
    for (const name of ['no-such-credential', theirs.name]) {
      const res = await t.request('POST', '/v2/agents', {
        body: { agent_name: 'Missing', llm: { ...llm, credential: name } },
      });
      expect(res.status).toBe(400);
      expect(errorOf(res).details).toBe(
        `body.llm.credential: the organization has no provider credential named ${JSON.stringify(name)}`,
      );
    }
    await t.request('POST', '/v2/agents', { body: { agent_id: 'patch-missing', agent_name: 'P', llm } });
    const patched = await t.request('PATCH', '/v2/agents/patch-missing', {
      body: { voice: { engine: 'openai', credential: 'no-such-credential' } },
    });
    expect(patched.status).toBe(400);
    expect(errorOf(patched).details).toContain('body.voice.credential');
  });

  it("answers 400 when the credential's provider does not fit the engine, or the engine is embedded and takes none", async () => {
    const deepgram = await createCredential({ provider: 'deepgram', name: uniqueName('dg'), api_key: KEY });
    const cases: [Record<string, unknown>, string][] = [
      [{ voice: { engine: 'openai', credential: deepgram.name } }, 'body.voice.credential'],
      [{ llm: { ...llm, credential: deepgram.name } }, 'body.llm.credential'],
      [{ voice: { engine: 'flite', credential: deepgram.name } }, 'body.voice.credential'],
      [{ stt: { engine: 'moonshine', credential: deepgram.name } }, 'body.stt.credential'],
    ];
    for (const [fields, field] of cases) {
      const res = await t.request('POST', '/v2/agents', { body: { agent_name: 'Misfit', llm, ...fields } });
      expect(res.status, JSON.stringify(fields)).toBe(400);
      expect(errorOf(res).details).toContain(field);
    }
  });

  it('refuses to delete or rename a credential an agent names (409 CREDENTIAL_IN_USE naming the agents) until no version in use names it', async () => {
    const c = await createCredential({ provider: 'openai', name: uniqueName('used'), api_key: KEY });
    const path = `/v2/provider-credentials/${c.provider_credential_id}`;
    const agentId = `uses-${c.name}`;
    expect(
      (
        await t.request('POST', '/v2/agents', {
          body: { agent_id: agentId, agent_name: 'User', llm: { ...llm, credential: c.name } },
        })
      ).status,
    ).toBe(201);
    const refused = await t.request('DELETE', path);
    expect(refused.status).toBe(409);
    expect(errorOf(refused).code).toBe('CREDENTIAL_IN_USE');
    expect(errorOf(refused).details).toContain(JSON.stringify(agentId));
    const rename = await t.request('PATCH', path, { body: { name: `${c.name}-new` } });
    expect(errorOf(rename).code).toBe('CREDENTIAL_IN_USE');
    // A key rotation is no rename: agents go on naming it.
    expect((await t.request('PATCH', path, { body: { api_key: 'rotated' } })).status).toBe(200);
    // The newest version no longer names it, but production (version 1) still does.
    await t.request('PATCH', `/v2/agents/${agentId}`, { body: { llm } });
    expect((await t.request('DELETE', path)).status).toBe(409);
    await t.request('POST', `/v2/agents/${agentId}/publish`);
    expect((await t.request('DELETE', path)).status).toBe(204);
  });
});

describe('the OpenAPI document', () => {
  it('documents the endpoints, the api_key as write-only in requests and absent from responses', async () => {
    const doc = (await t.request('GET', '/openapi.json')).body as {
      paths: Record<string, Record<string, { requestBody?: unknown; responses: Record<string, unknown> }>>;
    };
    const create = doc.paths['/v2/provider-credentials']!.post!;
    expect(JSON.stringify(create.requestBody)).toContain('"api_key":{"type":"string","minLength":1,"writeOnly":true');
    expect(JSON.stringify(create.responses)).not.toContain('api_key');
    for (const [path, methods] of [
      ['/v2/provider-credentials/{provider_credential_id}', ['get', 'patch', 'delete']],
      ['/v2/provider-credentials/list', ['post']],
    ] as const) {
      for (const method of methods) {
        expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
        expect(JSON.stringify(doc.paths[path]![method]!.responses)).not.toContain('api_key');
      }
    }
  });
});
