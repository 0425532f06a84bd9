// Carrier accounts on PostgreSQL: the same documents and tables as on SQLite (store/carrier-accounts.ts), each number
// claimed under its own lock (postgres/numbered-documents.ts).
import type {
  CarrierAccountPage,
  CarrierAccountRepository,
  OwnedCarrierAccount,
} from '../../carrier-accounts/repository.ts';
import type { CarrierAccount, ListCarrierAccountsQuery } from '../../carrier-accounts/schema.ts';
import type { SecretBox } from '../../secrets/sealed.ts';
import { accountPage, CARRIER_ACCOUNTS, LIVE_CALLS_SQL, ownedAccount } from '../carrier-accounts.ts';
import type { PgDb } from './db.ts';
import { PgNumberedDocuments } from './numbered-documents.ts';

export class PgCarrierAccountRepository implements CarrierAccountRepository {
  private readonly accounts: PgNumberedDocuments<
    CarrierAccount,
    NonNullable<ListCarrierAccountsQuery['filter_criteria']>
  >;

  constructor(
    private readonly db: PgDb,
    box: SecretBox,
  ) {
    this.accounts = new PgNumberedDocuments(db, box, CARRIER_ACCOUNTS);
  }

  insert(orgId: string, a: CarrierAccount): Promise<void> {
    return this.accounts.insert(orgId, a);
  }

  get(orgId: string, id: string): Promise<CarrierAccount | undefined> {
    return this.accounts.get(orgId, id);
  }

  update(orgId: string, a: CarrierAccount): Promise<boolean> {
    return this.accounts.update(orgId, a);
  }

  delete(orgId: string, id: string): Promise<boolean> {
    return this.accounts.delete(orgId, id);
  }

  async list(orgId: string, query: ListCarrierAccountsQuery): Promise<CarrierAccountPage> {
    return accountPage(await this.accounts.list(orgId, query));
  }

  async byNumber(number: string): Promise<OwnedCarrierAccount | undefined> {
    return ownedAccount(await this.accounts.byNumber(number));
  }

  async find(id: string): Promise<OwnedCarrierAccount | undefined> {
    return ownedAccount(await this.accounts.find(id));
  }

  async liveCalls(orgId: string, id: string): Promise<string[]> {
    return (await this.db.rows<{ call_id: string }>(LIVE_CALLS_SQL, [id, orgId])).map((r) => r.call_id);
  }
}
