// Carrier accounts on SQLite: each a JSON document (its credentials sealed) whose numbers are its own
// (numbered-documents.ts).
import type { CarrierAccountPage, OwnedCarrierAccount } from '../carrier-accounts/repository.ts';
import {
  CARRIER_ACCOUNT_SECRETS,
  type CarrierAccount,
  type ListCarrierAccountsQuery,
} from '../carrier-accounts/schema.ts';
import type { SecretBox } from '../secrets/sealed.ts';
import type { Db } from './database.ts';
import {
  SqliteNumberedDocuments,
  type NumberedDocumentKind,
  type NumberedDocumentPage,
  type OwnedDocument,
} from './numbered-documents.ts';

/** Carrier accounts: found by organization, carrier and name; numbers in carrier_account_numbers. */
export const CARRIER_ACCOUNTS: NumberedDocumentKind<CarrierAccount, CarrierAccountFilter> = {
  table: 'carrier_accounts',
  idColumn: 'carrier_account_id',
  documentColumn: 'account',
  numbersTable: 'carrier_account_numbers',
  columns: ['carrier'],
  secrets: CARRIER_ACCOUNT_SECRETS,
  id: (a) => a.carrier_account_id,
  columnValues: (a) => [a.carrier],
  filter: (where, f) => where.anyOf('carrier', f.carrier).anyOf('name', f.name),
  holder: 'carrier account',
};
type CarrierAccountFilter = NonNullable<ListCarrierAccountsQuery['filter_criteria']>;

/** Calls through an account that have not ended, as both stores ask for them. */
export const LIVE_CALLS_SQL = `SELECT cc.call_id FROM carrier_calls cc JOIN calls c ON c.call_id = cc.call_id
  WHERE cc.carrier_account_id = ? AND c.org_id = ? AND c.call_status IN ('registered', 'ongoing') ORDER BY cc.call_id`;

/** A page of documents as the carrier accounts' API pages them. */
export const accountPage = (page: NumberedDocumentPage<CarrierAccount>): CarrierAccountPage => ({
  accounts: page.documents,
  nextCursor: page.nextCursor,
  totalCount: page.totalCount,
});

/** An owned document as the carriers find it. */
export const ownedAccount = (owned: OwnedDocument<CarrierAccount> | undefined): OwnedCarrierAccount | undefined =>
  owned && { orgId: owned.orgId, account: owned.document };

export class SqliteCarrierAccountRepository {
  private readonly accounts: SqliteNumberedDocuments<CarrierAccount, CarrierAccountFilter>;

  constructor(
    private readonly db: Db,
    box: SecretBox,
  ) {
    this.accounts = new SqliteNumberedDocuments(db, box, CARRIER_ACCOUNTS);
  }

  insert(orgId: string, a: CarrierAccount): void {
    this.accounts.insert(orgId, a);
  }

  get(orgId: string, id: string): CarrierAccount | undefined {
    return this.accounts.get(orgId, id);
  }

  update(orgId: string, a: CarrierAccount): boolean {
    return this.accounts.update(orgId, a);
  }

  delete(orgId: string, id: string): boolean {
    return this.accounts.delete(orgId, id);
  }

  list(orgId: string, query: ListCarrierAccountsQuery): CarrierAccountPage {
    return accountPage(this.accounts.list(orgId, query));
  }

  byNumber(number: string): OwnedCarrierAccount | undefined {
    return ownedAccount(this.accounts.byNumber(number));
  }

  find(id: string): OwnedCarrierAccount | undefined {
    return ownedAccount(this.accounts.find(id));
  }

  liveCalls(orgId: string, id: string): string[] {
    return (this.db.prepare(LIVE_CALLS_SQL).all(id, orgId) as { call_id: string }[]).map((r) => r.call_id);
  }
}
