// SIP trunks in both stores — the embedded SQLite one and PostgreSQL (a real server from Debian's packages, started
// here in a temporary directory): kept per organization, their numbers claimed in the same table as agents' and
// carrier accounts' (one organization, one trunk each, even from two nodes at once) and let go with them, found by
// number, the passwords sealed at rest, keyset pages.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NumberTakenError } from '../../src/agents/repository.ts';
import { AgentConfigSchema } from '../../src/agents/schema.ts';
import { NumberOnAnotherTrunkError } from '../../src/sip-trunks/repository.ts';
import { ListSipTrunksBody, type SipTrunk } from '../../src/sip-trunks/schema.ts';
import { PgDb } from '../../src/store/postgres/db.ts';
import { openPgStore } from '../../src/store/postgres/store.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { postgresBinaries, startPostgres, type PostgresServer } from '../helpers/postgres.ts';
import { testSecretBox } from '../helpers/secrets.ts';

const NOW = 1_800_000_000_000;
let ids = 0;
const random = (bytes: number) => (++ids).toString(16).padStart(bytes * 2, '0');
const options = { random, now: () => NOW, secrets: testSecretBox() };

interface Opened {
  store: Store;
  peer: () => Promise<Store>;
  sql: (text: string, params?: unknown[]) => Promise<Record<string, unknown>[]>;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function openSqlite(): Promise<Opened> {
  const dir = mkdtempSync(join(tmpdir(), 'sip-trunk-store-'));
  const store = openStore(dir, options);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => store.close());
  return {
    store,
    peer: async () => {
      const peer = openStore(dir, options);
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
    peer: async () => {
      const peer = await openPgStore(url, options);
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
if ('missing' in found) console.warn(`PostgreSQL SIP trunk store suite skipped: ${found.missing}`);

const trunk = (id: string, numbers: string[], extra: Partial<SipTrunk> = {}): SipTrunk => ({
  sip_trunk_id: id,
  name: id,
  numbers,
  inbound: { allowed_addresses: ['192.0.2.0/24'], username: `user-${id}`, password: `password-of-${id}` },
  outbound: { address: 'pbx.example.com:5060', transport: 'udp', username: 'out', password: `out-password-${id}` },
  created_at: NOW,
  updated_at: NOW,
  ...extra,
});

const agentWith = (numbers: string[]) =>
  AgentConfigSchema.parse({
    agent_name: 'a',
    llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' },
    inbound_numbers: numbers,
  });

describe.each([
  { name: 'SQLite', open: openSqlite },
  ...('missing' in found ? [] : [{ name: 'PostgreSQL', open: openPostgres }]),
])('SIP trunks in the $name store', ({ open }) => {
  let opened: Opened;
  beforeAll(async () => {
    opened = await open();
  }, 60_000);

  it('keeps trunks per organization: read, replaced, deleted; found by number with their organization', async () => {
    const repo = opened.store.sipTrunks;
    const a = trunk('siptrunk_a', ['+15550400001']);
    await repo.insert('acme', a);
    expect(await repo.get('acme', 'siptrunk_a')).toEqual(a);
    expect(await repo.get('globex', 'siptrunk_a')).toBeUndefined();
    expect(await repo.byNumber('+15550400001')).toEqual({ orgId: 'acme', trunk: a });
    expect(await repo.update('globex', { ...a, name: 'stolen' })).toBe(false);
    expect(await repo.delete('globex', 'siptrunk_a')).toBe(false);
    expect(await repo.anyWithCredentials()).toBe(true);

    const moved = { ...a, numbers: ['+15550400002'], name: 'moved', updated_at: NOW + 1 };
    expect(await repo.update('acme', moved)).toBe(true);
    expect(await repo.byNumber('+15550400001')).toBeUndefined();
    expect(await repo.byNumber('+15550400002')).toEqual({ orgId: 'acme', trunk: moved });
    expect(await repo.delete('acme', 'siptrunk_a')).toBe(true);
    expect(await repo.byNumber('+15550400002')).toBeUndefined();
  });

  it('claims numbers for one organization with agents’ and carrier accounts’ numbers, one trunk each, let go only when none holds them', async () => {
    const { store } = opened;
    await store.sipTrunks.insert('acme', trunk('siptrunk_n1', ['+15550400010']));
    await expect(store.sipTrunks.insert('globex', trunk('siptrunk_n2', ['+15550400010']))).rejects.toBeInstanceOf(
      NumberTakenError,
    );
    await expect(
      store.agents.insertVersion('globex', 'g', agentWith(['+15550400010']), { published: true, at: NOW }),
    ).rejects.toBeInstanceOf(NumberTakenError);
    await expect(store.sipTrunks.insert('acme', trunk('siptrunk_n3', ['+15550400010']))).rejects.toBeInstanceOf(
      NumberOnAnotherTrunkError,
    );
    // Another organization's agent's number is refused to a trunk too.
    await store.agents.insertVersion('globex', 'g2', agentWith(['+15550400012']), { published: true, at: NOW });
    await expect(store.sipTrunks.insert('acme', trunk('siptrunk_n4', ['+15550400012']))).rejects.toBeInstanceOf(
      NumberTakenError,
    );
    // The organization's agent lists it too: the trunk lets it go, the agent keeps it; then the agent drops it.
    await store.agents.insertVersion('acme', 'desk', agentWith(['+15550400010']), { published: true, at: NOW });
    await store.sipTrunks.delete('acme', 'siptrunk_n1');
    expect(await store.agents.numberOwner('+15550400010')).toBe('acme');
    await store.sipTrunks.insert('acme', trunk('siptrunk_n5', ['+15550400011']));
    await store.sipTrunks.delete('acme', 'siptrunk_n5');
    expect(await store.agents.numberOwner('+15550400011')).toBeUndefined();
  });

  it('gives a number to one organization even when two nodes claim it at once', async () => {
    const { store, peer } = opened;
    const other = await peer();
    const racing = await Promise.allSettled([
      store.sipTrunks.insert('acme', trunk('siptrunk_r1', ['+15550400020'])),
      other.sipTrunks.insert('globex', trunk('siptrunk_r2', ['+15550400020'])),
    ]);
    expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(racing.find((r) => r.status === 'rejected')?.reason).toBeInstanceOf(NumberTakenError);
  });

  it('keeps the passwords sealed at rest and opens them with the one key', async () => {
    const { store, sql } = opened;
    await store.sipTrunks.insert('acme', trunk('siptrunk_s', ['+15550400030']));
    const [row] = await sql("SELECT trunk FROM sip_trunks WHERE sip_trunk_id = 'siptrunk_s'");
    expect(String(row!.trunk)).not.toContain('password-of-siptrunk_s');
    expect(String(row!.trunk)).not.toContain('out-password-siptrunk_s');
    const read = await store.sipTrunks.get('acme', 'siptrunk_s');
    expect(read?.inbound.password).toBe('password-of-siptrunk_s');
    expect(read?.outbound?.password).toBe('out-password-siptrunk_s');
  });

  it('lists an organization by created_at in keyset pages with total_count and a name filter', async () => {
    const repo = opened.store.sipTrunks;
    for (let i = 0; i < 5; i++)
      await repo.insert('paging', trunk(`siptrunk_p${i}`, [`+1555040005${i}`], { created_at: NOW + (i % 3) }));
    const seen: string[] = [];
    let pagination_key: string | null = null;
    do {
      const page = await repo.list(
        'paging',
        ListSipTrunksBody.parse({ sort_order: 'ascending', limit: 2, pagination_key }),
      );
      expect(page.totalCount).toBe(5);
      seen.push(...page.trunks.map((t) => t.sip_trunk_id));
      pagination_key = page.nextCursor;
    } while (pagination_key);
    expect(seen).toEqual(['siptrunk_p0', 'siptrunk_p3', 'siptrunk_p1', 'siptrunk_p4', 'siptrunk_p2']);
    const named = await repo.list('paging', ListSipTrunksBody.parse({ filter_criteria: { name: ['siptrunk_p4'] } }));
    expect(named.trunks.map((t) => t.sip_trunk_id)).toEqual(['siptrunk_p4']);
  });
});
