// Where an organization's carrier accounts are kept; the store implements it (SQLite and PostgreSQL). An account's
// numbers are claimed in the same table agents' inbound numbers are (number_owners), so a number belongs to one
// organization whether an agent or an account holds it, and to one account within it.
import type { CarrierAccount, ListCarrierAccountsQuery } from './schema.ts';

export interface CarrierAccountPage {
  accounts: CarrierAccount[];
  nextCursor: string | null;
  totalCount: number;
}

/** An account with the organization it belongs to (found by number or id alone, as a carrier's request finds it). */
export interface OwnedCarrierAccount {
  orgId: string;
  account: CarrierAccount;
}

export interface CarrierAccountRepository {
  /**
   * Its numbers become the organization's in the same transaction: NumberTakenError (agents/repository.ts) when another
   * organization holds one, NumberHeldElsewhereError when another account of this one does.
   */
  insert(orgId: string, account: CarrierAccount): Promise<void>;
  get(orgId: string, id: string): Promise<CarrierAccount | undefined>;
  /** Replaces the stored account and its numbers (those dropped are let go); false when there is none. */
  update(orgId: string, account: CarrierAccount): Promise<boolean>;
  /** Deletes it and lets its numbers go (but those an agent of the organization lists). */
  delete(orgId: string, id: string): Promise<boolean>;
  /** Keyset pages by created_at, ties by id. */
  list(orgId: string, query: ListCarrierAccountsQuery): Promise<CarrierAccountPage>;
  /** The account, of any organization, holding the number. */
  byNumber(number: string): Promise<OwnedCarrierAccount | undefined>;
  /** The account by its id alone (the one a call was placed or answered through). */
  find(id: string): Promise<OwnedCarrierAccount | undefined>;
  /** The calls placed or answered through the account that have not ended. */
  liveCalls(orgId: string, id: string): Promise<string[]>;
}
