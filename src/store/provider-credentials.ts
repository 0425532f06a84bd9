// Provider credentials on SQLite: each a JSON document (its api_key sealed) under the columns it is found by; a
// name is unique in its organization (the table's UNIQUE holds it against two requests at once).
import type Database from 'better-sqlite3';
import { CredentialNameTakenError, type CredentialPage } from '../credentials/repository.ts';
import { CREDENTIAL_SECRETS, type ListCredentialsQuery, type ProviderCredential } from '../credentials/schema.ts';
import type { SecretBox } from '../secrets/sealed.ts';
import type { Db } from './database.ts';
import { keysetPage, ListWhere, queryFingerprint } from './paging.ts';

export interface CredentialRow {
  credential_id: string;
  created_at: number;
  credential: string;
}

/** The credential column: its api_key sealed. */
export const storedCredential = (credential: ProviderCredential, box: SecretBox): string =>
  JSON.stringify(CREDENTIAL_SECRETS.seal(credential, box));

/** A stored credential as the runtime uses it: its api_key opened. */
export const openedCredential = (text: string, box: SecretBox): ProviderCredential =>
  CREDENTIAL_SECRETS.open(JSON.parse(text) as ProviderCredential, box);

/** A page of an organization's credentials as both stores fetch it: the WHERE, the keyset and the cursor. */
export function credentialListPage(orgId: string, query: ListCredentialsQuery) {
  const filter = query.filter_criteria ?? {};
  const where = new ListWhere('org_id = ?', orgId).anyOf('provider', filter.provider).anyOf('name', filter.name);
  return {
    where: where.sql,
    params: where.params,
    order: query.sort_order,
    sortColumn: 'created_at',
    idColumn: 'credential_id',
    limit: query.limit,
    paginationKey: query.pagination_key,
    fingerprint: queryFingerprint(['provider_credentials', filter, query.sort_order]),
    cursorOf: (row: CredentialRow) => ({ sortKey: row.created_at, id: row.credential_id }),
  };
}

const isUniqueViolation = (error: unknown) => (error as { code?: string } | null)?.code === 'SQLITE_CONSTRAINT_UNIQUE';

export class SqliteProviderCredentialRepository {
  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
  ) {}

  private run(statement: Database.Statement<unknown[]>, name: string, ...params: unknown[]): number {
    try {
      return statement.run(...params).changes;
    } catch (error) {
      if (isUniqueViolation(error)) throw new CredentialNameTakenError(name);
      throw error;
    }
  }

  insert(orgId: string, c: ProviderCredential): void {
    this.run(
      this.db.prepare(
        'INSERT INTO provider_credentials (credential_id, org_id, name, provider, created_at, credential) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      c.name,
      c.provider_credential_id,
      orgId,
      c.name,
      c.provider,
      c.created_at,
      storedCredential(c, this.box),
    );
  }

  get(orgId: string, id: string): ProviderCredential | undefined {
    const row = this.db
      .prepare('SELECT credential FROM provider_credentials WHERE org_id = ? AND credential_id = ?')
      .get(orgId, id) as { credential: string } | undefined;
    return row ? openedCredential(row.credential, this.box) : undefined;
  }

  byName(orgId: string, name: string): ProviderCredential | undefined {
    const row = this.db
      .prepare('SELECT credential FROM provider_credentials WHERE org_id = ? AND name = ?')
      .get(orgId, name) as { credential: string } | undefined;
    return row ? openedCredential(row.credential, this.box) : undefined;
  }

  update(orgId: string, c: ProviderCredential): boolean {
    return (
      this.run(
        this.db.prepare(
          'UPDATE provider_credentials SET name = ?, credential = ? WHERE org_id = ? AND credential_id = ?',
        ),
        c.name,
        c.name,
        storedCredential(c, this.box),
        orgId,
        c.provider_credential_id,
      ) === 1
    );
  }

  delete(orgId: string, id: string): boolean {
    return (
      this.db.prepare('DELETE FROM provider_credentials WHERE org_id = ? AND credential_id = ?').run(orgId, id)
        .changes === 1
    );
  }

  list(orgId: string, query: ListCredentialsQuery): CredentialPage {
    const options = credentialListPage(orgId, query);
    const total = this.db
      .prepare(`SELECT count(*) AS n FROM provider_credentials WHERE ${options.where}`)
      .get(...options.params) as { n: number };
    const page = keysetPage({
      ...options,
      fetch: (where, all, order, limit) =>
        this.db
          .prepare(
            `SELECT credential_id, created_at, credential FROM provider_credentials WHERE ${where} ${order} LIMIT ?`,
          )
          .all(...all, limit) as CredentialRow[],
    });
    return {
      credentials: page.rows.map((row) => openedCredential(row.credential, this.box)),
      nextCursor: page.nextCursor,
      totalCount: total.n,
    };
  }
}
