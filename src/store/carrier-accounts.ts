// Carrier accounts on SQLite: each a JSON document (its credentials sealed) under the columns it is found by. Its
// numbers are claimed for the organization in number_owners (as agents' are) and listed in carrier_account_numbers,
// one account each, in the same transaction as the account itself.
import {
  NumberOnAnotherAccountError,
  type CarrierAccountPage,
  type OwnedCarrierAccount,
} from '../carrier-accounts/repository.ts';
import {
  CARRIER_ACCOUNT_SECRETS,
  type CarrierAccount,
  type ListCarrierAccountsQuery,
} from '../carrier-accounts/schema.ts';
import { NumberTakenError } from '../agents/repository.ts';
import type { SecretBox } from '../secrets/sealed.ts';
import type { Db } from './database.ts';
import { RELEASE_UNLISTED_NUMBERS_SQLITE } from './numbers.ts';
import { keysetPage, ListWhere, queryFingerprint } from './paging.ts';

export interface CarrierAccountRow {
  carrier_account_id: string;
  created_at: number;
  account: string;
}

/** The account column: its credentials sealed. */
export const storedAccount = (account: CarrierAccount, box: SecretBox): string =>
  JSON.stringify(CARRIER_ACCOUNT_SECRETS.seal(account, box));

/** A stored account as the carriers use it: its credentials opened. */
export const openedAccount = (text: string, box: SecretBox): CarrierAccount =>
  CARRIER_ACCOUNT_SECRETS.open(JSON.parse(text) as CarrierAccount, box);

/** A page of an organization's accounts as both stores fetch it: the WHERE, the keyset and the cursor. */
export function carrierAccountListPage(orgId: string, query: ListCarrierAccountsQuery) {
  const filter = query.filter_criteria ?? {};
  const where = new ListWhere('org_id = ?', orgId).anyOf('carrier', filter.carrier).anyOf('name', filter.name);
  return {
    where: where.sql,
    params: where.params,
    order: query.sort_order,
    sortColumn: 'created_at',
    idColumn: 'carrier_account_id',
    limit: query.limit,
    paginationKey: query.pagination_key,
    fingerprint: queryFingerprint(['carrier_accounts', filter, query.sort_order]),
    cursorOf: (row: CarrierAccountRow) => ({ sortKey: row.created_at, id: row.carrier_account_id }),
  };
}

/** Calls through an account that have not ended, as both stores ask for them. */
export const LIVE_CALLS_SQL = `SELECT cc.call_id FROM carrier_calls cc JOIN calls c ON c.call_id = cc.call_id
  WHERE cc.carrier_account_id = ? AND c.org_id = ? AND c.call_status IN ('registered', 'ongoing') ORDER BY cc.call_id`;

export class SqliteCarrierAccountRepository {
  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
  ) {}

  insert(orgId: string, a: CarrierAccount): void {
    this.db
      .transaction(() => {
        this.claimNumbers(orgId, a);
        this.db
          .prepare(
            'INSERT INTO carrier_accounts (carrier_account_id, org_id, carrier, name, created_at, account) VALUES (?, ?, ?, ?, ?, ?)',
          )
          .run(a.carrier_account_id, orgId, a.carrier, a.name, a.created_at, storedAccount(a, this.box));
      })
      .immediate();
  }

  get(orgId: string, id: string): CarrierAccount | undefined {
    const row = this.db
      .prepare('SELECT account FROM carrier_accounts WHERE org_id = ? AND carrier_account_id = ?')
      .get(orgId, id) as { account: string } | undefined;
    return row ? openedAccount(row.account, this.box) : undefined;
  }

  update(orgId: string, a: CarrierAccount): boolean {
    return this.db
      .transaction(() => {
        const changed = this.db
          .prepare('UPDATE carrier_accounts SET name = ?, account = ? WHERE org_id = ? AND carrier_account_id = ?')
          .run(a.name, storedAccount(a, this.box), orgId, a.carrier_account_id).changes;
        if (changed !== 1) return false;
        this.claimNumbers(orgId, a);
        return true;
      })
      .immediate();
  }

  delete(orgId: string, id: string): boolean {
    return this.db
      .transaction(() => {
        const deleted = this.db
          .prepare('DELETE FROM carrier_accounts WHERE org_id = ? AND carrier_account_id = ?')
          .run(orgId, id).changes;
        if (deleted !== 1) return false;
        this.db.prepare('DELETE FROM carrier_account_numbers WHERE carrier_account_id = ?').run(id);
        this.db.prepare(RELEASE_UNLISTED_NUMBERS_SQLITE).run(orgId, orgId, orgId);
        return true;
      })
      .immediate();
  }

  list(orgId: string, query: ListCarrierAccountsQuery): CarrierAccountPage {
    const options = carrierAccountListPage(orgId, query);
    const total = this.db
      .prepare(`SELECT count(*) AS n FROM carrier_accounts WHERE ${options.where}`)
      .get(...options.params) as { n: number };
    const page = keysetPage({
      ...options,
      fetch: (where, all, order, limit) =>
        this.db
          .prepare(
            `SELECT carrier_account_id, created_at, account FROM carrier_accounts WHERE ${where} ${order} LIMIT ?`,
          )
          .all(...all, limit) as CarrierAccountRow[],
    });
    return {
      accounts: page.rows.map((row) => openedAccount(row.account, this.box)),
      nextCursor: page.nextCursor,
      totalCount: total.n,
    };
  }

  byNumber(number: string): OwnedCarrierAccount | undefined {
    const row = this.db
      .prepare(
        `SELECT a.org_id, a.account FROM carrier_account_numbers n
           JOIN carrier_accounts a ON a.carrier_account_id = n.carrier_account_id WHERE n.number = ?`,
      )
      .get(number) as { org_id: string; account: string } | undefined;
    return row ? { orgId: row.org_id, account: openedAccount(row.account, this.box) } : undefined;
  }

  find(id: string): OwnedCarrierAccount | undefined {
    const row = this.db.prepare('SELECT org_id, account FROM carrier_accounts WHERE carrier_account_id = ?').get(id) as
      { org_id: string; account: string } | undefined;
    return row ? { orgId: row.org_id, account: openedAccount(row.account, this.box) } : undefined;
  }

  liveCalls(orgId: string, id: string): string[] {
    return (this.db.prepare(LIVE_CALLS_SQL).all(id, orgId) as { call_id: string }[]).map((r) => r.call_id);
  }

  /** Inside the caller's transaction: the account's numbers become its own (and the organization's), the rest go. */
  private claimNumbers(orgId: string, a: CarrierAccount): void {
    const now = a.updated_at;
    for (const number of a.numbers) {
      this.db
        .prepare('INSERT OR IGNORE INTO number_owners (number, org_id, claimed_at) VALUES (?, ?, ?)')
        .run(number, orgId, now);
      const owner = this.db.prepare('SELECT org_id FROM number_owners WHERE number = ?').get(number) as
        { org_id: string } | undefined;
      if (owner?.org_id !== orgId) throw new NumberTakenError(number);
      const holder = this.db
        .prepare('SELECT carrier_account_id FROM carrier_account_numbers WHERE number = ?')
        .get(number) as { carrier_account_id: string } | undefined;
      if (holder && holder.carrier_account_id !== a.carrier_account_id)
        throw new NumberOnAnotherAccountError(number, holder.carrier_account_id);
    }
    this.db.prepare('DELETE FROM carrier_account_numbers WHERE carrier_account_id = ?').run(a.carrier_account_id);
    const add = this.db.prepare(
      'INSERT INTO carrier_account_numbers (number, org_id, carrier_account_id) VALUES (?, ?, ?)',
    );
    for (const number of a.numbers) add.run(number, orgId, a.carrier_account_id);
    this.db.prepare(RELEASE_UNLISTED_NUMBERS_SQLITE).run(orgId, orgId, orgId);
  }
}
