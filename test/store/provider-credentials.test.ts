// Provider credentials in both stores (test/store/record-store-rules.ts keeps the rules every owned record kind
// shares: read back, per organization, the api_key sealed at rest, keyset pages); here what is a credential's own:
// read by name, a name once per organization even when two nodes write at once, a node holding another key stopped
// at start, the provider filter.
import { expect, it } from 'vitest';
import { CredentialNameTakenError, type ProviderCredentialRepository } from '../../src/credentials/repository.ts';
import { ListCredentialsBody, type ProviderCredential } from '../../src/credentials/schema.ts';
import { SecretBox, SecretKeyError } from '../../src/secrets/sealed.ts';
import { describeRecordStore, NOW, type RecordKind } from './record-store-rules.ts';

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

const PROVIDER_CREDENTIALS: RecordKind<ProviderCredential, ProviderCredentialRepository> = {
  title: 'provider credentials',
  dirPrefix: 'credential-store-',
  idPrefix: 'pcred_',
  repo: (store) => store.providerCredentials,
  record: (id, _numbers, createdAt = NOW) =>
    credential(id, `name-of-${id}`, { base_url: 'wss://dg.example.com', created_at: createdAt }),
  renamed: (c) => ({ ...c, name: `${c.name}-renamed`, updated_at: c.updated_at + 1 }),
  stored: { table: 'provider_credentials', column: 'credential', idColumn: 'credential_id' },
  secretsOf: (c) => [c.api_key],
  pagingRecord: (id, i) =>
    credential(id, `p${i}`, { created_at: NOW + (i % 3), provider: i < 2 ? 'openai' : 'cartesia' }),
  list: async (repo, orgId, body) => {
    const page = await repo.list(orgId, ListCredentialsBody.parse(body));
    return {
      ids: page.credentials.map((c) => c.provider_credential_id),
      totalCount: page.totalCount,
      nextCursor: page.nextCursor,
    };
  },
  filter: { provider: ['openai'] },
  filteredPaging: [1, 0],
};

describeRecordStore(PROVIDER_CREDENTIALS, (opened) => {
  it('reads a credential by name in its organization alone, by its new name once renamed, by neither once deleted', async () => {
    const repo = opened().store.providerCredentials;
    const c = credential('pcred_a', 'main', { base_url: 'wss://dg.example.com' });
    await repo.insert('acme', c);
    expect(await repo.byName('acme', 'main')).toEqual(c);
    expect(await repo.byName('globex', 'main')).toBeUndefined();
    const renamed = { ...c, name: 'primary', api_key: 'rotated', updated_at: NOW + 1 };
    expect(await repo.update('acme', renamed)).toBe(true);
    expect(await repo.byName('acme', 'main')).toBeUndefined();
    expect(await repo.byName('acme', 'primary')).toEqual(renamed);
    expect(await repo.delete('acme', 'pcred_a')).toBe(true);
    expect(await repo.byName('acme', 'primary')).toBeUndefined();
  });

  it('gives a name once per organization: a second insert or a rename onto it is CredentialNameTakenError, even from two nodes at once; another organization may use it', async () => {
    const { store, peer } = opened();
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

  it('keeps the api_key sealed in its own field, and a node holding another key stops at start', async () => {
    const { store, peer, sql } = opened();
    await store.providerCredentials.insert('acme', credential('pcred_s', 'sealed', { api_key: 'plaintext-key-93f1' }));
    const [row] = await sql("SELECT credential FROM provider_credentials WHERE credential_id = 'pcred_s'");
    expect(String(row!.credential)).not.toContain('plaintext-key-93f1');
    expect((JSON.parse(String(row!.credential)) as { api_key: string }).api_key).toMatch(/^sealed:v1:/);
    const stranger = await peer(new SecretBox(Buffer.alloc(32, 9)));
    await expect(stranger.sealStoredSecrets()).rejects.toThrow(SecretKeyError);
    await expect(stranger.providerCredentials.get('acme', 'pcred_s')).rejects.toThrow(SecretKeyError);
  });
});
