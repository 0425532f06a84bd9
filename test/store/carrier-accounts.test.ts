// Carrier accounts in both stores — the embedded SQLite one and PostgreSQL (a real server from Debian's packages,
// started here in a temporary directory): kept per organization, their numbers claimed in the same table as agents'
// (one organization, one account each, even from two nodes at once) and let go with them, found by number and by
// id, the credentials sealed at rest, calls recorded with their account, keyset pages.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NumberTakenError } from '../../src/agents/repository.ts';
import { AgentConfigSchema } from '../../src/agents/schema.ts';
import { NumberOnAnotherAccountError } from '../../src/carrier-accounts/repository.ts';
import { ListCarrierAccountsBody, type CarrierAccount } from '../../src/carrier-accounts/schema.ts';
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
  const dir = mkdtempSync(join(tmpdir(), 'carrier-account-store-'));
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
if ('missing' in found) console.warn(`PostgreSQL carrier account store suite skipped: ${found.missing}`);

const account = (id: string, numbers: string[], extra: Partial<CarrierAccount> = {}): CarrierAccount => ({
  carrier_account_id: id,
  carrier: 'twilio',
  name: id,
  numbers,
  credentials: { account_sid: `AC${'1'.repeat(32)}`, auth_token: `token-of-${id}` },
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
])('carrier accounts in the $name store', ({ open }) => {
  let opened: Opened;
  beforeAll(async () => {
    opened = await open();
  }, 60_000);

  it('keeps accounts per organization: read, replaced, deleted; found by number and id with their organization', async () => {
    const repo = opened.store.carrierAccounts;
    const a = account('cacct_a', ['+15550300001']);
    await repo.insert('acme', a);
    expect(await repo.get('acme', 'cacct_a')).toEqual(a);
    expect(await repo.get('globex', 'cacct_a')).toBeUndefined();
    expect(await repo.byNumber('+15550300001')).toEqual({ orgId: 'acme', account: a });
    expect(await repo.find('cacct_a')).toEqual({ orgId: 'acme', account: a });
    expect(await repo.update('globex', { ...a, name: 'stolen' })).toBe(false);
    expect(await repo.delete('globex', 'cacct_a')).toBe(false);

    const moved = { ...a, numbers: ['+15550300002'], name: 'moved', updated_at: NOW + 1 };
    expect(await repo.update('acme', moved)).toBe(true);
    expect(await repo.byNumber('+15550300001')).toBeUndefined();
    expect(await repo.byNumber('+15550300002')).toEqual({ orgId: 'acme', account: moved });
    expect(await repo.delete('acme', 'cacct_a')).toBe(true);
    expect(await repo.find('cacct_a')).toBeUndefined();
    expect(await repo.byNumber('+15550300002')).toBeUndefined();
  });

  it('claims numbers for one organization with agents’ numbers: another organization’s account or agent is refused, and a number is let go only when neither lists it', async () => {
    const { store } = opened;
    await store.carrierAccounts.insert('acme', account('cacct_n1', ['+15550300010']));
    await expect(store.carrierAccounts.insert('globex', account('cacct_n2', ['+15550300010']))).rejects.toBeInstanceOf(
      NumberTakenError,
    );
    await expect(
      store.agents.insertVersion('globex', 'g', agentWith(['+15550300010']), { published: true, at: NOW }),
    ).rejects.toBeInstanceOf(NumberTakenError);
    expect(await store.agents.numberOwner('+15550300010')).toBe('acme');
    // A second account of the same organization may not hold it either.
    await expect(store.carrierAccounts.insert('acme', account('cacct_n3', ['+15550300010']))).rejects.toBeInstanceOf(
      NumberOnAnotherAccountError,
    );
    // The organization's agent lists it too; the account lets it go, the agent keeps it.
    await store.agents.insertVersion('acme', 'desk', agentWith(['+15550300010']), { published: true, at: NOW });
    await store.carrierAccounts.delete('acme', 'cacct_n1');
    expect(await store.agents.numberOwner('+15550300010')).toBe('acme');
    // An agent's number an account holds stays when the agent drops it.
    await store.carrierAccounts.insert('acme', account('cacct_n4', ['+15550300011']));
    await store.agents.insertVersion('acme', 'desk2', agentWith(['+15550300011']), { published: true, at: NOW });
    await store.agents.insertVersion('acme', 'desk2', agentWith([]), { published: true, at: NOW });
    await store.agents.publishNewest('acme', 'desk2', NOW);
    expect(await store.agents.numberOwner('+15550300011')).toBe('acme');
    await store.carrierAccounts.delete('acme', 'cacct_n4');
    expect(await store.agents.numberOwner('+15550300011')).toBeUndefined();
  });

  it('gives a number to one organization even when two nodes claim it at once', async () => {
    const { store, peer } = opened;
    const other = await peer();
    const racing = await Promise.allSettled([
      store.carrierAccounts.insert('acme', account('cacct_r1', ['+15550300020'])),
      other.carrierAccounts.insert('globex', account('cacct_r2', ['+15550300020'])),
    ]);
    expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(racing.find((r) => r.status === 'rejected')?.reason).toBeInstanceOf(NumberTakenError);
  });

  it('keeps the credentials sealed at rest and opens them with the one key', async () => {
    const { store, sql } = opened;
    await store.carrierAccounts.insert(
      'acme',
      account('cacct_s', [], {
        credentials: { auth_id: 'MAXXXXXXXXXXXXXXXXXX', auth_token: 'plaintext-93f1' },
        carrier: 'plivo',
      }),
    );
    const [row] = await sql("SELECT account FROM carrier_accounts WHERE carrier_account_id = 'cacct_s'");
    expect(String(row!.account)).not.toContain('plaintext-93f1');
    expect(String(row!.account)).not.toContain('MAXXXXXXXXXXXXXXXXXX');
    expect((await store.carrierAccounts.get('acme', 'cacct_s'))?.credentials).toEqual({
      auth_id: 'MAXXXXXXXXXXXXXXXXXX',
      auth_token: 'plaintext-93f1',
    });
  });

  it('records the account a call went through, and names the calls not yet ended', async () => {
    const { store } = opened;
    await store.carrierAccounts.insert('acme', account('cacct_c', ['+15550300030']));
    await store.carrierCalls.record('call_x', 'twilio', 'CAx', NOW, 'cacct_c');
    await store.carrierCalls.record('call_y', 'twilio', 'CAy', NOW);
    expect(await store.carrierCalls.carrierAccountOf('call_x')).toBe('cacct_c');
    expect(await store.carrierCalls.carrierAccountOf('call_y')).toBeUndefined();
    expect(await store.carrierAccounts.liveCalls('acme', 'cacct_c')).toEqual([]);
  });

  it('lists an organization by created_at in keyset pages with total_count and a carrier filter', async () => {
    const repo = opened.store.carrierAccounts;
    for (let i = 0; i < 5; i++)
      await repo.insert(
        'paging',
        account(`cacct_p${i}`, [], { created_at: NOW + (i % 3), carrier: i < 2 ? 'twilio' : 'plivo' }),
      );
    const seen: string[] = [];
    let pagination_key: string | null = null;
    do {
      const page = await repo.list(
        'paging',
        ListCarrierAccountsBody.parse({ sort_order: 'ascending', limit: 2, pagination_key }),
      );
      expect(page.totalCount).toBe(5);
      seen.push(...page.accounts.map((a) => a.carrier_account_id));
      pagination_key = page.nextCursor;
    } while (pagination_key);
    expect(seen).toEqual(['cacct_p0', 'cacct_p3', 'cacct_p1', 'cacct_p4', 'cacct_p2']);
    const twilio = await repo.list(
      'paging',
      ListCarrierAccountsBody.parse({ filter_criteria: { carrier: ['twilio'] } }),
    );
    expect(twilio.accounts.map((a) => a.carrier_account_id)).toEqual(['cacct_p1', 'cacct_p0']);
  });
});
