// Provider credentials on PostgreSQL: the same documents and columns as on SQLite (store/provider-credentials.ts).
import {
  CredentialNameTakenError,
  type CredentialPage,
  type ProviderCredentialRepository,
} from '../../credentials/repository.ts';
import type { ListCredentialsQuery, ProviderCredential } from '../../credentials/schema.ts';
import type { SecretBox } from '../../secrets/sealed.ts';
import { keysetPageAsync } from '../paging.ts';
import { credentialListPage, openedCredential, storedCredential, type CredentialRow } from '../provider-credentials.ts';
import type { Param, PgDb } from './db.ts';

/** PostgreSQL's unique_violation. */
const UNIQUE_VIOLATION = '23505';

export class PgProviderCredentialRepository implements ProviderCredentialRepository {
  constructor(
    private readonly db: PgDb,
    private readonly box: SecretBox,
  ) {}

  private async run(sql: string, name: string, params: readonly Param[]): Promise<number> {
    try {
      return await this.db.run(sql, params);
    } catch (error) {
      if ((error as { code?: string } | null)?.code === UNIQUE_VIOLATION) throw new CredentialNameTakenError(name);
      throw error;
    }
  }

  async insert(orgId: string, c: ProviderCredential): Promise<void> {
    await this.run(
      'INSERT INTO provider_credentials (credential_id, org_id, name, provider, created_at, credential) VALUES (?, ?, ?, ?, ?, ?)',
      c.name,
      [c.provider_credential_id, orgId, c.name, c.provider, c.created_at, storedCredential(c, this.box)],
    );
  }

  async get(orgId: string, id: string): Promise<ProviderCredential | undefined> {
    const row = await this.db.row<{ credential: string }>(
      'SELECT credential FROM provider_credentials WHERE org_id = ? AND credential_id = ?',
      [orgId, id],
    );
    return row ? openedCredential(row.credential, this.box) : undefined;
  }

  async byName(orgId: string, name: string): Promise<ProviderCredential | undefined> {
    const row = await this.db.row<{ credential: string }>(
      'SELECT credential FROM provider_credentials WHERE org_id = ? AND name = ?',
      [orgId, name],
    );
    return row ? openedCredential(row.credential, this.box) : undefined;
  }

  async update(orgId: string, c: ProviderCredential): Promise<boolean> {
    return (
      (await this.run(
        'UPDATE provider_credentials SET name = ?, credential = ? WHERE org_id = ? AND credential_id = ?',
        c.name,
        [c.name, storedCredential(c, this.box), orgId, c.provider_credential_id],
      )) === 1
    );
  }

  async delete(orgId: string, id: string): Promise<boolean> {
    return (
      (await this.db.run('DELETE FROM provider_credentials WHERE org_id = ? AND credential_id = ?', [orgId, id])) === 1
    );
  }

  async list(orgId: string, query: ListCredentialsQuery): Promise<CredentialPage> {
    const options = credentialListPage(orgId, query);
    const total = await this.db.row<{ n: number }>(
      `SELECT count(*) AS n FROM provider_credentials WHERE ${options.where}`,
      options.params,
    );
    const page = await keysetPageAsync({
      ...options,
      fetch: (where, all, order, limit) =>
        this.db.rows<CredentialRow>(
          `SELECT credential_id, created_at, credential FROM provider_credentials WHERE ${where} ${order} LIMIT ?`,
          [...all, limit],
        ),
    });
    return {
      credentials: page.rows.map((row) => openedCredential(row.credential, this.box)),
      nextCursor: page.nextCursor,
      totalCount: total?.n ?? 0,
    };
  }
}
