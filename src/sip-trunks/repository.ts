// Where an organization's SIP trunks are kept; the store implements it (SQLite and PostgreSQL). A trunk's numbers
// are claimed in the same table agents' inbound numbers and carrier accounts' numbers are (number_owners), so a
// number belongs to one organization whichever holds it, and to one trunk within it.
import type { ListSipTrunksQuery, SipTrunk } from './schema.ts';

export interface SipTrunkPage {
  trunks: SipTrunk[];
  nextCursor: string | null;
  totalCount: number;
}

/** A trunk with the organization it belongs to (found by number alone, as an INVITE finds it). */
export interface OwnedSipTrunk {
  orgId: string;
  trunk: SipTrunk;
}

export interface SipTrunkRepository {
  /**
   * Its numbers become the organization's in the same transaction: NumberTakenError (agents/repository.ts) when another
   * organization holds one, NumberHeldElsewhereError when another trunk of this one does.
   */
  insert(orgId: string, trunk: SipTrunk): Promise<void>;
  get(orgId: string, id: string): Promise<SipTrunk | undefined>;
  /** Replaces the stored trunk and its numbers (those dropped are let go); false when there is none. */
  update(orgId: string, trunk: SipTrunk): Promise<boolean>;
  /** Deletes it and lets its numbers go (but those an agent or carrier account of the organization holds). */
  delete(orgId: string, id: string): Promise<boolean>;
  /** Keyset pages by created_at, ties by id. */
  list(orgId: string, query: ListSipTrunksQuery): Promise<SipTrunkPage>;
  /** The trunk, of any organization, holding the number. */
  byNumber(number: string): Promise<OwnedSipTrunk | undefined>;
  /** Whether any trunk takes calls by username and password (then unknown callers are challenged first). */
  anyWithCredentials(): Promise<boolean>;
}
