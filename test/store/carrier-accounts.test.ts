// Carrier accounts in both stores (test/store/record-store-rules.ts keeps the rules every owned record kind shares:
// read back, per organization, credentials sealed at rest, keyset pages, numbers claimed with agents' even from two
// nodes at once); here what is an account's own: found by number and by id with its organization, a number an
// account holds kept when an agent drops it, calls recorded with their account, the carrier filter.
import { expect, it } from 'vitest';
import { NumberHeldElsewhereError } from '../../src/agents/repository.ts';
import { type CarrierAccountRepository } from '../../src/carrier-accounts/repository.ts';
import { ListCarrierAccountsBody, type CarrierAccount } from '../../src/carrier-accounts/schema.ts';
import { agentWith, describeRecordStore, NOW, type RecordKind } from './record-store-rules.ts';

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

const CARRIER_ACCOUNTS: RecordKind<CarrierAccount, CarrierAccountRepository> = {
  title: 'carrier accounts',
  dirPrefix: 'carrier-account-store-',
  idPrefix: 'cacct_',
  repo: (store) => store.carrierAccounts,
  // Plivo's, so that both of its credentials are secrets the row must not show.
  record: (id, numbers, createdAt = NOW) =>
    account(id, numbers, {
      carrier: 'plivo',
      credentials: { auth_id: 'MAXXXXXXXXXXXXXXXXXX', auth_token: `plaintext-of-${id}` },
      created_at: createdAt,
    }),
  renamed: (a) => ({ ...a, name: `${a.name}-renamed`, updated_at: a.updated_at + 1 }),
  stored: { table: 'carrier_accounts', column: 'account', idColumn: 'carrier_account_id' },
  secretsOf: (a) => Object.values(a.credentials),
  pagingRecord: (id, i) => account(id, [], { created_at: NOW + (i % 3), carrier: i < 2 ? 'twilio' : 'plivo' }),
  list: async (repo, orgId, body) => {
    const page = await repo.list(orgId, ListCarrierAccountsBody.parse(body));
    return {
      ids: page.accounts.map((a) => a.carrier_account_id),
      totalCount: page.totalCount,
      nextCursor: page.nextCursor,
    };
  },
  filter: { carrier: ['twilio'] },
  filteredPaging: [1, 0],
  numbers: {
    byNumber: (store, number) => store.carrierAccounts.byNumber(number),
    onAnotherRecord: NumberHeldElsewhereError,
    base: '+155503000',
  },
};

describeRecordStore(CARRIER_ACCOUNTS, (opened) => {
  it('finds an account by number and by id with its organization, by its new number once moved, by neither once deleted', async () => {
    const repo = opened().store.carrierAccounts;
    const a = account('cacct_a', ['+15550300001']);
    await repo.insert('acme', a);
    expect(await repo.byNumber('+15550300001')).toEqual({ orgId: 'acme', account: a });
    expect(await repo.find('cacct_a')).toEqual({ orgId: 'acme', account: a });
    const moved = { ...a, numbers: ['+15550300002'], name: 'moved', updated_at: NOW + 1 };
    expect(await repo.update('acme', moved)).toBe(true);
    expect(await repo.byNumber('+15550300001')).toBeUndefined();
    expect(await repo.byNumber('+15550300002')).toEqual({ orgId: 'acme', account: moved });
    expect(await repo.delete('acme', 'cacct_a')).toBe(true);
    expect(await repo.find('cacct_a')).toBeUndefined();
    expect(await repo.byNumber('+15550300002')).toBeUndefined();
  });

  it('keeps a number an account holds when the organization’s agent that also listed it drops it', async () => {
    const { store } = opened();
    await store.carrierAccounts.insert('acme', account('cacct_n4', ['+15550300051']));
    await store.agents.insertVersion('acme', 'desk2', agentWith(['+15550300051']), { published: true, at: NOW });
    await store.agents.insertVersion('acme', 'desk2', agentWith([]), { published: true, at: NOW });
    await store.agents.publishNewest('acme', 'desk2', NOW);
    expect(await store.agents.numberOwner('+15550300051')).toBe('acme');
    await store.carrierAccounts.delete('acme', 'cacct_n4');
    expect(await store.agents.numberOwner('+15550300051')).toBeUndefined();
  });

  it('records the account a call went through, and names the calls not yet ended', async () => {
    const { store } = opened();
    await store.carrierAccounts.insert('acme', account('cacct_c', ['+15550300030']));
    await store.carrierCalls.record('call_x', 'twilio', 'CAx', NOW, 'cacct_c');
    await store.carrierCalls.record('call_y', 'twilio', 'CAy', NOW);
    expect(await store.carrierCalls.carrierAccountOf('call_x')).toBe('cacct_c');
    expect(await store.carrierCalls.carrierAccountOf('call_y')).toBeUndefined();
    expect(await store.carrierAccounts.liveCalls('acme', 'cacct_c')).toEqual([]);
  });
});
