// The rules every organization-owned record kind with secrets keeps in both stores — the embedded SQLite one and
// PostgreSQL (a real server from Debian's packages, started here in a temporary directory): read back as written,
// hidden from another organization (which can neither replace nor delete it), its secrets sealed at rest and opened
// with the one key, keyset pages by created_at with total_count and a filter, and — for kinds that hold phone
// numbers — numbers claimed for one organization in the same table as agents' (even from two nodes at once) and
// let go only when nothing lists them. Each kind's test file describes its kind once (a RecordKind) and calls
// describeRecordStore with it and the rules that are its own.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NumberTakenError } from '../../src/agents/repository.ts';
import { AgentConfigSchema } from '../../src/agents/schema.ts';
import { PgDb } from '../../src/store/postgres/db.ts';
import { openPgStore } from '../../src/store/postgres/store.ts';
import { SEALED_PREFIX, type SecretBox } from '../../src/secrets/sealed.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { postgresBinaries, startPostgres, type PostgresServer } from '../helpers/postgres.ts';
import { testSecretBox } from '../helpers/secrets.ts';

export const NOW = 1_800_000_000_000;

/** One store opened for a suite: another node on the same data (with another key if given) and raw SQL on it. */
export interface OpenedStore {
  store: Store;
  peer: (secrets?: SecretBox) => Promise<Store>;
  sql: (text: string, params?: unknown[]) => Promise<Record<string, unknown>[]>;
}

const found = postgresBinaries();

/**
 * How one test file opens its stores: all it opens (a PostgreSQL server too) is closed in the file's afterAll. The
 * state lives here, not in this module: unit files share their worker's modules (vitest.config.ts).
 */
export function storeOpeners(dirPrefix: string): {
  sqlite: () => Promise<OpenedStore>;
  postgres: () => Promise<OpenedStore>;
} {
  let ids = 0;
  const random = (bytes: number) => (++ids).toString(16).padStart(bytes * 2, '0');
  const options = { random, now: () => NOW, secrets: testSecretBox() };
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const sqlite = async (): Promise<OpenedStore> => {
    const dir = mkdtempSync(join(tmpdir(), dirPrefix));
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
      sql: async (text, params = []) => {
        const statement = store.sqlite!.prepare(text);
        if (!statement.reader) {
          statement.run(...params);
          return [];
        }
        return statement.all(...params) as Record<string, unknown>[];
      },
    };
  };

  let server: Promise<PostgresServer> | undefined;
  const postgres = async (): Promise<OpenedStore> => {
    server ??= startPostgres().then((started) => {
      cleanups.unshift(() => started.stop());
      return started;
    });
    const url = await (await server).database();
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
  };
  return { sqlite, postgres };
}

/** An agent that answers `numbers`, to claim them beside a record kind's. */
export const agentWith = (numbers: string[]) =>
  AgentConfigSchema.parse({
    agent_name: 'a',
    llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' },
    inbound_numbers: numbers,
  });

/** What a repository of organization-owned records offers every kind. */
export interface OwnedRecords<R> {
  insert(orgId: string, record: R): Promise<void>;
  get(orgId: string, id: string): Promise<R | undefined>;
  update(orgId: string, record: R): Promise<boolean>;
  delete(orgId: string, id: string): Promise<boolean>;
}

/** One page of a kind's list, reduced to what the paging rule reads. */
export interface RecordPage {
  ids: string[];
  totalCount: number;
  nextCursor: string | null;
}

export interface RecordKind<R, Repo extends OwnedRecords<R> = OwnedRecords<R>> {
  /** The kind's plural name in test names: "SIP trunks". */
  readonly title: string;
  /** The prefix of the SQLite store's temporary directory. */
  readonly dirPrefix: string;
  /** The prefix of the kind's ids: "siptrunk_". */
  readonly idPrefix: string;
  readonly repo: (store: Store) => Repo;
  /** A record with id `id` holding `numbers` (kinds without numbers ignore them), created at `createdAt`. */
  readonly record: (id: string, numbers: string[], createdAt?: number) => R;
  /** The same record with a field changed that is not its id, its numbers nor a secret. */
  readonly renamed: (record: R) => R;
  /** Where a record's JSON lies: `SELECT <column> FROM <table> WHERE <idColumn> = '<id>'`. */
  readonly stored: { table: string; column: string; idColumn: string };
  /** The record's secrets in plain text: none may be in its stored row. */
  readonly secretsOf: (record: R) => string[];
  /** The i-th of the paging rule's five records, id `id`, created at NOW + i % 3 (the filter may pick by i). */
  readonly pagingRecord: (id: string, i: number) => R;
  /** One page of `orgId`'s records for a list request's body (parsed by the kind's own schema). */
  readonly list: (repo: Repo, orgId: string, body: Record<string, unknown>) => Promise<RecordPage>;
  /** A filter_criteria, and which of the paging records it gives back (newest first). */
  readonly filter: Record<string, unknown>;
  readonly filteredPaging: number[];
  /** For kinds that hold numbers: how a number is found, and the error for a second record of one organization. */
  readonly numbers?: {
    readonly byNumber: (store: Store, number: string) => Promise<{ orgId: string } | undefined>;
    readonly onAnotherRecord: abstract new (...args: never[]) => Error;
    /** The kind's own block of test numbers: `${base}NN`. */
    readonly base: string;
  };
}

/**
 * Describes `kind` in each store: the shared rules, then `own(opened)` — the rules that are the kind's alone, given
 * the store the suite opened.
 */
export function describeRecordStore<R, Repo extends OwnedRecords<R>>(
  kind: RecordKind<R, Repo>,
  own: (opened: () => OpenedStore) => void,
): void {
  if ('missing' in found) console.warn(`PostgreSQL ${kind.title} store suite skipped: ${found.missing}`);
  const open = storeOpeners(kind.dirPrefix);
  describe.each([
    { name: 'SQLite', open: open.sqlite },
    ...('missing' in found ? [] : [{ name: 'PostgreSQL', open: open.postgres }]),
  ])(`${kind.title} in the $name store`, ({ open }) => {
    let opened: OpenedStore;
    beforeAll(async () => {
      opened = await open();
    }, 60_000);
    recordStoreRules(kind, () => opened);
    own(() => opened);
  });
}

function recordStoreRules<R, Repo extends OwnedRecords<R>>(kind: RecordKind<R, Repo>, opened: () => OpenedStore): void {
  const { record } = kind;
  const idOf = (i: string) => `${kind.idPrefix}${i}`;

  it('reads a record back as written, replaces it and deletes it; another organization can neither see, replace nor delete it', async () => {
    const repo = kind.repo(opened().store);
    const id = idOf('own');
    const a = record(id, []);
    await repo.insert('acme', a);
    expect(await repo.get('acme', id)).toEqual(a);
    expect(await repo.get('globex', id)).toBeUndefined();
    expect(await repo.update('globex', kind.renamed(a))).toBe(false);
    expect(await repo.delete('globex', id)).toBe(false);
    expect(await repo.get('acme', id)).toEqual(a);
    const replaced = kind.renamed(a);
    expect(await repo.update('acme', replaced)).toBe(true);
    expect(await repo.get('acme', id)).toEqual(replaced);
    expect(await repo.delete('acme', id)).toBe(true);
    expect(await repo.get('acme', id)).toBeUndefined();
    expect(await repo.update('acme', replaced)).toBe(false);
    expect(await repo.delete('acme', id)).toBe(false);
  });

  it('keeps the secrets sealed at rest and opens them with the one key', async () => {
    const { store, sql } = opened();
    const repo = kind.repo(store);
    const id = idOf('sealed');
    const a = record(id, []);
    await repo.insert('acme', a);
    const { table, column, idColumn } = kind.stored;
    const [row] = await sql(`SELECT ${column} FROM ${table} WHERE ${idColumn} = '${id}'`);
    const text = String(row![column]);
    expect(kind.secretsOf(a).length).toBeGreaterThan(0);
    for (const secret of kind.secretsOf(a)) expect(text).not.toContain(secret);
    expect(text).toContain(SEALED_PREFIX);
    expect(await repo.get('acme', id)).toEqual(a);
    const other = await opened().peer();
    expect(await kind.repo(other).get('acme', id)).toEqual(a);
  });

  it('lists an organization by created_at in keyset pages with total_count and a filter; another organization lists none', async () => {
    const repo = kind.repo(opened().store);
    for (let i = 0; i < 5; i++) await repo.insert('paging', kind.pagingRecord(idOf(`p${i}`), i));
    const seen: string[] = [];
    let pagination_key: string | null = null;
    do {
      const page: RecordPage = await kind.list(repo, 'paging', {
        sort_order: 'ascending',
        limit: 2,
        pagination_key,
      });
      expect(page.totalCount).toBe(5);
      expect(page.ids.length).toBeLessThanOrEqual(2);
      seen.push(...page.ids);
      pagination_key = page.nextCursor;
    } while (pagination_key);
    expect(seen).toEqual([0, 3, 1, 4, 2].map((i) => idOf(`p${i}`)));
    const filtered = await kind.list(repo, 'paging', { filter_criteria: kind.filter });
    expect(filtered.ids).toEqual(kind.filteredPaging.map((i) => idOf(`p${i}`)));
    expect(filtered.totalCount).toBe(kind.filteredPaging.length);
    expect((await kind.list(repo, 'nobody', {})).totalCount).toBe(0);
  });

  const numbers = kind.numbers;
  if (!numbers) return;
  const n = (i: number) => `${numbers.base}${String(i).padStart(2, '0')}`;

  it('claims numbers for one organization with agents’ numbers: another organization’s record or agent is refused, a second record of the same organization too', async () => {
    const { store } = opened();
    const repo = kind.repo(store);
    await repo.insert('acme', record(idOf('n1'), [n(10)]));
    expect(await numbers.byNumber(store, n(10))).toMatchObject({ orgId: 'acme' });
    await expect(repo.insert('globex', record(idOf('n2'), [n(10)]))).rejects.toBeInstanceOf(NumberTakenError);
    await expect(
      store.agents.insertVersion('globex', 'g', agentWith([n(10)]), { published: true, at: NOW }),
    ).rejects.toBeInstanceOf(NumberTakenError);
    expect(await store.agents.numberOwner(n(10))).toBe('acme');
    await expect(repo.insert('acme', record(idOf('n3'), [n(10)]))).rejects.toBeInstanceOf(numbers.onAnotherRecord);
    // Another organization's agent's number is refused to a record too.
    await store.agents.insertVersion('globex', 'g2', agentWith([n(12)]), { published: true, at: NOW });
    await expect(repo.insert('acme', record(idOf('n4'), [n(12)]))).rejects.toBeInstanceOf(NumberTakenError);
  });

  it('lets a number go with the record that held it, unless the organization’s agent lists it too; moving a record’s numbers moves what it is found by', async () => {
    const { store } = opened();
    const repo = kind.repo(store);
    await repo.insert('acme', record(idOf('g1'), [n(40)]));
    await store.agents.insertVersion('acme', 'desk-g', agentWith([n(40)]), { published: true, at: NOW });
    await repo.delete('acme', idOf('g1'));
    expect(await store.agents.numberOwner(n(40))).toBe('acme');
    expect(await numbers.byNumber(store, n(40))).toBeUndefined();
    await repo.insert('acme', record(idOf('g2'), [n(41)]));
    await repo.delete('acme', idOf('g2'));
    expect(await store.agents.numberOwner(n(41))).toBeUndefined();
    await repo.insert('acme', record(idOf('g3'), [n(42)]));
    expect(await repo.update('acme', kind.renamed(record(idOf('g3'), [n(43)])))).toBe(true);
    expect(await numbers.byNumber(store, n(42))).toBeUndefined();
    expect(await store.agents.numberOwner(n(42))).toBeUndefined();
    expect(await numbers.byNumber(store, n(43))).toMatchObject({ orgId: 'acme' });
    await repo.delete('acme', idOf('g3'));
    expect(await numbers.byNumber(store, n(43))).toBeUndefined();
  });

  it('gives a number to one organization even when two nodes claim it at once', async () => {
    const { store, peer } = opened();
    const other = await peer();
    const racing = await Promise.allSettled([
      kind.repo(store).insert('acme', record(idOf('r1'), [n(20)])),
      kind.repo(other).insert('globex', record(idOf('r2'), [n(20)])),
    ]);
    expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(racing.find((r) => r.status === 'rejected')?.reason).toBeInstanceOf(NumberTakenError);
  });
}
