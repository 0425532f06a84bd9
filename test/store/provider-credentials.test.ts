// Provider credentials in both stores — the embedded SQLite one and PostgreSQL (a real server from Debian's
// packages, started here in a temporary directory): kept per organization, a name once per organization even when
// two nodes write at once, the api_key sealed at rest and refused to a node holding another key, keyset pages.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CredentialNameTakenError } from '../../src/credentials/repository.ts';
import { ListCredentialsBody, type ProviderCredential } from '../../src/credentials/schema.ts';
import { PgDb } from '../../src/store/postgres/db.ts';
import { openPgStore } from '../../src/store/postgres/store.ts';
import { SecretBox, SecretKeyError } from '../../src/secrets/sealed.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { postgresBinaries, startPostgres, type PostgresServer } from '../helpers/postgres.ts';
import { testSecretBox } from '../helpers/secrets.ts';

const NOW = 1_800_000_000_000;
let ids = 0;
const random = (bytes: number) => (++ids).toString(16).padStart(bytes * 2, '0');
const options = { random, now: () => NOW, secrets: testSecretBox() };

interface Opened {
  store: Store;
  peer: (secrets?: SecretBox) => Promise<Store>;
  sql: (text: string, params?: unknown[]) => Promise<Record<string, unknown>[]>;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function openSqlite(): Promise<Opened> {
  const dir = mkdtempSync(join(tmpdir(), 'credential-store-'));
  const store = openStore(dir, options);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => store.close());
  return {
    store,
    peer: async (secrets = options.secrets) => {
      const peer = openStore(dir, { ...options, secrets });
      cleanups.push(() => peer.close());
      return peer;
    },
    sql: async (text, params = []) => store.sqlite!.prepare(text).all(...params) as Record<string, unknown>[],
  };
}

const found = postgresBinaries();
let server: PostgresServer | undefined;
async function openPostgres(): Promise<Opened> {
  server ??= await startPostgres().then((started) => {
    cleanups.unshift(() => started.stop());
    return started;
  });
  const url = await server!.database();
  const store = await openPgStore(url, options);
  cleanups.push(() => store.close());
  return {
    store,
    peer: async (secrets = options.secrets) => {
      const peer = await openPgStore(url, { ...options, secrets });
      cleanups.push(() => peer.close());
      return peer;
    },
    sql: async (text, params = []) => {
      const db = new PgDb(url, { max: 1 });
      try {
        return await db.rows<Record<string, unknown>>(text, params as never);
      } finally {
        await db.close();
      }
    },
  };
}
if ('missing' in found) console.warn(`PostgreSQL credential store suite skipped: ${found.missing}`);

const credential = (id: string, name: string, extra: Partial<ProviderCredential> = {}): ProviderCredential => ({
  provider_credential_id: id,
  provider: 'deepgram',
  name,
  api_key: `key-of-${id}`,
  base_url: null,
  created_at: NOW,
  updated_at: NOW,
  ...extra,
});

describe.each([
  { name: 'SQLite', open: openSqlite },
  ...('missing' in found ? [] : [{ name: 'PostgreSQL', open: openPostgres }]),
])('provider credentials in the $name store', ({ open }) => {
  let opened: Opened;
  beforeAll(async () => {
    opened = await open();
  }, 60_000);

  it('keeps credentials per organization: read by id and by name, replaced, deleted; another organization sees none', async () => {
    const { store } = opened;
    const repo = store.providerCredentials;
    const c = credential('pcred_a', 'main', { base_url: 'wss://dg.example.com' });
    await repo.insert('acme', c);
    expect(await repo.get('acme', 'pcred_a')).toEqual(c);
    expect(await repo.byName('acme', 'main')).toEqual(c);
    expect(await repo.get('globex', 'pcred_a')).toBeUndefined();
    expect(await repo.byName('globex', 'main')).toBeUndefined();
    expect(await repo.update('globex', { ...c, api_key: 'stolen' })).toBe(false);
    expect(await repo.delete('globex', 'pcred_a')).toBe(false);

    const renamed = { ...c, name: 'primary', api_key: 'rotated', updated_at: NOW + 1 };
    expect(await repo.update('acme', renamed)).toBe(true);
    expect(await repo.byName('acme', 'main')).toBeUndefined();
    expect(await repo.byName('acme', 'primary')).toEqual(renamed);
    expect(await repo.delete('acme', 'pcred_a')).toBe(true);
    expect(await repo.get('acme', 'pcred_a')).toBeUndefined();
    expect(await repo.update('acme', renamed)).toBe(false);
  });

  it('gives a name once per organization: a second insert or a rename onto it is CredentialNameTakenError, even from two nodes at once; another organization may use it', async () => {
    const { store, peer } = opened;
    const other = await peer();
    const racing = await Promise.allSettled([
      store.providerCredentials.insert('acme', credential('pcred_r1', 'raced')),
      other.providerCredentials.insert('acme', credential('pcred_r2', 'raced')),
    ]);
    expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = racing.find((r) => r.status === 'rejected');
    expect(lost?.reason).toBeInstanceOf(CredentialNameTakenError);
    await store.providerCredentials.insert('acme', credential('pcred_r3', 'elsewhere'));
    await expect(store.providerCredentials.update('acme', credential('pcred_r3', 'raced'))).rejects.toBeInstanceOf(
      CredentialNameTakenError,
    );
    await store.providerCredentials.insert('globex', credential('pcred_r4', 'raced'));
    expect((await store.providerCredentials.byName('globex', 'raced'))?.provider_credential_id).toBe('pcred_r4');
  });

  it('keeps the api_key sealed at rest, opens it with the one key, and a node holding another key stops at start', async () => {
    const { store, peer, sql } = opened;
    await store.providerCredentials.insert('acme', credential('pcred_s', 'sealed', { api_key: 'plaintext-key-93f1' }));
    const [row] = await sql("SELECT credential FROM provider_credentials WHERE credential_id = 'pcred_s'");
    expect(String(row!.credential)).not.toContain('plaintext-key-93f1');
    expect((JSON.parse(String(row!.credential)) as { api_key: string }).api_key).toMatch(/^sealed:v1:/);
    expect((await store.providerCredentials.get('acme', 'pcred_s'))?.api_key).toBe('plaintext-key-93f1');
    const stranger = await peer(new SecretBox(Buffer.alloc(32, 9)));
    await expect(stranger.sealStoredSecrets()).rejects.toThrow(SecretKeyError);
    await expect(stranger.providerCredentials.get('acme', 'pcred_s')).rejects.toThrow(SecretKeyError);
  });

  it('lists an organization by created_at in keyset pages with total_count and filters', async () => {
    const { store } = opened;
    const repo = store.providerCredentials;
    for (let i = 0; i < 5; i++) {
      await repo.insert(
        'paging',
        credential(`pcred_p${i}`, `p${i}`, { created_at: NOW + (i % 3), provider: i < 2 ? 'openai' : 'cartesia' }),
      );
    }
    const seen: string[] = [];
    let pagination_key: string | null = null;
    do {
      const page = await repo.list(
        'paging',
        ListCredentialsBody.parse({ sort_order: 'ascending', limit: 2, pagination_key }),
      );
      expect(page.totalCount).toBe(5);
      seen.push(...page.credentials.map((c) => c.provider_credential_id));
      pagination_key = page.nextCursor;
    } while (pagination_key);
    expect(seen).toEqual(['pcred_p0', 'pcred_p3', 'pcred_p1', 'pcred_p4', 'pcred_p2']);
    const openai = await repo.list('paging', ListCredentialsBody.parse({ filter_criteria: { provider: ['openai'] } }));
    expect(openai.credentials.map((c) => c.provider_credential_id)).toEqual(['pcred_p1', 'pcred_p0']);
    expect(openai.totalCount).toBe(2);
    expect((await repo.list('nobody', ListCredentialsBody.parse({}))).totalCount).toBe(0);
  });
});
