// SIP trunks in both stores (test/store/record-store-rules.ts keeps the rules every owned record kind shares: read
// back, per organization, passwords sealed at rest, keyset pages, numbers claimed with agents' even from two nodes at
// once); here what is a trunk's own: found by number with its organization, numbers claimed beside carrier accounts',
// and whether any trunk holds credentials.
import { expect, it } from 'vitest';
import { NumberHeldElsewhereError, NumberTakenError } from '../../src/agents/repository.ts';
import { type SipTrunkRepository } from '../../src/sip-trunks/repository.ts';
import { ListSipTrunksBody, type SipTrunk } from '../../src/sip-trunks/schema.ts';
import { describeRecordStore, NOW, type RecordKind } from './record-store-rules.ts';

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

const SIP_TRUNKS: RecordKind<SipTrunk, SipTrunkRepository> = {
  title: 'SIP trunks',
  dirPrefix: 'sip-trunk-store-',
  idPrefix: 'siptrunk_',
  repo: (store) => store.sipTrunks,
  record: (id, numbers, createdAt = NOW) => trunk(id, numbers, { created_at: createdAt }),
  renamed: (t) => ({ ...t, name: `${t.name}-renamed`, updated_at: t.updated_at + 1 }),
  stored: { table: 'sip_trunks', column: 'trunk', idColumn: 'sip_trunk_id' },
  secretsOf: (t) => [t.inbound.password, t.outbound?.password].filter((s): s is string => s !== undefined),
  pagingRecord: (id, i) => trunk(id, [`+1555040005${i}`], { created_at: NOW + (i % 3) }),
  list: async (repo, orgId, body) => {
    const page = await repo.list(orgId, ListSipTrunksBody.parse(body));
    return { ids: page.trunks.map((t) => t.sip_trunk_id), totalCount: page.totalCount, nextCursor: page.nextCursor };
  },
  filter: { name: ['siptrunk_p4'] },
  filteredPaging: [4],
  numbers: {
    byNumber: (store, number) => store.sipTrunks.byNumber(number),
    onAnotherRecord: NumberHeldElsewhereError,
    base: '+155504000',
  },
};

describeRecordStore(SIP_TRUNKS, (opened) => {
  it('finds a trunk by number with its organization, by its new number once moved; any trunk holds credentials', async () => {
    const repo = opened().store.sipTrunks;
    const a = trunk('siptrunk_a', ['+15550400001']);
    await repo.insert('acme', a);
    expect(await repo.byNumber('+15550400001')).toEqual({ orgId: 'acme', trunk: a });
    expect(await repo.anyWithCredentials()).toBe(true);
    const moved = { ...a, numbers: ['+15550400002'], name: 'moved', updated_at: NOW + 1 };
    expect(await repo.update('acme', moved)).toBe(true);
    expect(await repo.byNumber('+15550400001')).toBeUndefined();
    expect(await repo.byNumber('+15550400002')).toEqual({ orgId: 'acme', trunk: moved });
    expect(await repo.delete('acme', 'siptrunk_a')).toBe(true);
    expect(await repo.byNumber('+15550400002')).toBeUndefined();
  });

  it('claims a number in the same table as carrier accounts’: another organization’s account’s number is refused to a trunk, and a trunk’s to an account', async () => {
    const { store } = opened();
    await store.carrierAccounts.insert('globex', {
      carrier_account_id: 'cacct_t1',
      carrier: 'twilio',
      name: 'other',
      numbers: ['+15550400060'],
      credentials: { account_sid: `AC${'1'.repeat(32)}`, auth_token: 'token' },
      created_at: NOW,
      updated_at: NOW,
    });
    await expect(store.sipTrunks.insert('acme', trunk('siptrunk_c1', ['+15550400060']))).rejects.toBeInstanceOf(
      NumberTakenError,
    );
    await store.sipTrunks.insert('acme', trunk('siptrunk_c2', ['+15550400061']));
    await expect(
      store.carrierAccounts.insert('globex', {
        carrier_account_id: 'cacct_t2',
        carrier: 'twilio',
        name: 'other',
        numbers: ['+15550400061'],
        credentials: { account_sid: `AC${'1'.repeat(32)}`, auth_token: 'token' },
        created_at: NOW,
        updated_at: NOW,
      }),
    ).rejects.toBeInstanceOf(NumberTakenError);
  });
});
