// Carrier accounts on PostgreSQL: the same documents and tables as on SQLite (store/carrier-accounts.ts). Each
// number is claimed under its own lock, as agents' inbound numbers are, so two nodes cannot both take one.
import { NumberTakenError } from '../../agents/repository.ts';
import {
  NumberOnAnotherAccountError,
  type CarrierAccountPage,
  type CarrierAccountRepository,
  type OwnedCarrierAccount,
} from '../../carrier-accounts/repository.ts';
import type { CarrierAccount, ListCarrierAccountsQuery } from '../../carrier-accounts/schema.ts';
import type { SecretBox } from '../../secrets/sealed.ts';
import {
  carrierAccountListPage,
  LIVE_CALLS_SQL,
  openedAccount,
  storedAccount,
  type CarrierAccountRow,
} from '../carrier-accounts.ts';
import { RELEASE_UNLISTED_NUMBERS_PG } from '../numbers.ts';
import { keysetPageAsync } from '../paging.ts';
import { lockFor, type PgDb, type Queryable } from './db.ts';

export class PgCarrierAccountRepository implements CarrierAccountRepository {
  constructor(
    private readonly db: PgDb,
    private readonly box: SecretBox,
  ) {}

  insert(orgId: string, a: CarrierAccount): Promise<void> {
    return this.db.transaction(async (tx) => {
      await this.claimNumbers(tx, orgId, a);
      await tx.run(
        'INSERT INTO carrier_accounts (carrier_account_id, org_id, carrier, name, created_at, account) VALUES (?, ?, ?, ?, ?, ?)',
        [a.carrier_account_id, orgId, a.carrier, a.name, a.created_at, storedAccount(a, this.box)],
      );
    });
  }

  async get(orgId: string, id: string): Promise<CarrierAccount | undefined> {
    const row = await this.db.row<{ account: string }>(
      'SELECT account FROM carrier_accounts WHERE org_id = ? AND carrier_account_id = ?',
      [orgId, id],
    );
    return row ? openedAccount(row.account, this.box) : undefined;
  }

  update(orgId: string, a: CarrierAccount): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const changed = await tx.run(
        'UPDATE carrier_accounts SET name = ?, account = ? WHERE org_id = ? AND carrier_account_id = ?',
        [a.name, storedAccount(a, this.box), orgId, a.carrier_account_id],
      );
      if (changed !== 1) return false;
      await this.claimNumbers(tx, orgId, a);
      return true;
    });
  }

  delete(orgId: string, id: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const deleted = await tx.run('DELETE FROM carrier_accounts WHERE org_id = ? AND carrier_account_id = ?', [
        orgId,
        id,
      ]);
      if (deleted !== 1) return false;
      await tx.run('DELETE FROM carrier_account_numbers WHERE carrier_account_id = ?', [id]);
      await tx.run(RELEASE_UNLISTED_NUMBERS_PG, [orgId, orgId, orgId]);
      return true;
    });
  }

  async list(orgId: string, query: ListCarrierAccountsQuery): Promise<CarrierAccountPage> {
    const options = carrierAccountListPage(orgId, query);
    const total = await this.db.row<{ n: number }>(
      `SELECT count(*) AS n FROM carrier_accounts WHERE ${options.where}`,
      options.params,
    );
    const page = await keysetPageAsync({
      ...options,
      fetch: (where, all, order, limit) =>
        this.db.rows<CarrierAccountRow>(
          `SELECT carrier_account_id, created_at, account FROM carrier_accounts WHERE ${where} ${order} LIMIT ?`,
          [...all, limit],
        ),
    });
    return {
      accounts: page.rows.map((row) => openedAccount(row.account, this.box)),
      nextCursor: page.nextCursor,
      totalCount: total?.n ?? 0,
    };
  }

  async byNumber(number: string): Promise<OwnedCarrierAccount | undefined> {
    const row = await this.db.row<{ org_id: string; account: string }>(
      `SELECT a.org_id, a.account FROM carrier_account_numbers n
         JOIN carrier_accounts a ON a.carrier_account_id = n.carrier_account_id WHERE n.number = ?`,
      [number],
    );
    return row ? { orgId: row.org_id, account: openedAccount(row.account, this.box) } : undefined;
  }

  async find(id: string): Promise<OwnedCarrierAccount | undefined> {
    const row = await this.db.row<{ org_id: string; account: string }>(
      'SELECT org_id, account FROM carrier_accounts WHERE carrier_account_id = ?',
      [id],
    );
    return row ? { orgId: row.org_id, account: openedAccount(row.account, this.box) } : undefined;
  }

  async liveCalls(orgId: string, id: string): Promise<string[]> {
    return (await this.db.rows<{ call_id: string }>(LIVE_CALLS_SQL, [id, orgId])).map((r) => r.call_id);
  }

  /** Inside the caller's transaction: the account's numbers become its own (and the organization's), the rest go. */
  private async claimNumbers(tx: Queryable, orgId: string, a: CarrierAccount): Promise<void> {
    for (const number of a.numbers) {
      await lockFor(tx, `number:${number}`);
      await tx.run(
        'INSERT INTO number_owners (number, org_id, claimed_at) VALUES (?, ?, ?) ON CONFLICT (number) DO NOTHING',
        [number, orgId, a.updated_at],
      );
      const owner = await tx.row<{ org_id: string }>('SELECT org_id FROM number_owners WHERE number = ?', [number]);
      if (owner?.org_id !== orgId) throw new NumberTakenError(number);
      const holder = await tx.row<{ carrier_account_id: string }>(
        'SELECT carrier_account_id FROM carrier_account_numbers WHERE number = ?',
        [number],
      );
      if (holder && holder.carrier_account_id !== a.carrier_account_id)
        throw new NumberOnAnotherAccountError(number, holder.carrier_account_id);
    }
    await tx.run('DELETE FROM carrier_account_numbers WHERE carrier_account_id = ?', [a.carrier_account_id]);
    for (const number of a.numbers)
      await tx.run('INSERT INTO carrier_account_numbers (number, org_id, carrier_account_id) VALUES (?, ?, ?)', [
        number,
        orgId,
        a.carrier_account_id,
      ]);
    await tx.run(RELEASE_UNLISTED_NUMBERS_PG, [orgId, orgId, orgId]);
  }
}
