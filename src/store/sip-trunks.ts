// SIP trunks on SQLite: each a JSON document (its passwords sealed) whose numbers are its own (numbered-documents.ts).
import type { OwnedSipTrunk, SipTrunkPage } from '../sip-trunks/repository.ts';
import { SIP_TRUNK_SECRETS, type ListSipTrunksQuery, type SipTrunk } from '../sip-trunks/schema.ts';
import type { SecretBox } from '../secrets/sealed.ts';
import type { Db } from './database.ts';
import {
  SqliteNumberedDocuments,
  type NumberedDocumentKind,
  type NumberedDocumentPage,
  type OwnedDocument,
} from './numbered-documents.ts';

/** SIP trunks: found by organization and name; numbers in sip_trunk_numbers. */
export const SIP_TRUNKS: NumberedDocumentKind<SipTrunk, SipTrunkFilter> = {
  table: 'sip_trunks',
  idColumn: 'sip_trunk_id',
  documentColumn: 'trunk',
  numbersTable: 'sip_trunk_numbers',
  columns: [],
  secrets: SIP_TRUNK_SECRETS,
  id: (t) => t.sip_trunk_id,
  columnValues: () => [],
  filter: (where, f) => where.anyOf('name', f.name),
  holder: 'SIP trunk',
};
type SipTrunkFilter = NonNullable<ListSipTrunksQuery['filter_criteria']>;

/** A page of documents as the trunks' API pages them. */
export const trunkPage = (page: NumberedDocumentPage<SipTrunk>): SipTrunkPage => ({
  trunks: page.documents,
  nextCursor: page.nextCursor,
  totalCount: page.totalCount,
});

/** An owned document as an INVITE finds it. */
export const ownedTrunk = (owned: OwnedDocument<SipTrunk> | undefined): OwnedSipTrunk | undefined =>
  owned && { orgId: owned.orgId, trunk: owned.document };

export class SqliteSipTrunkRepository {
  private readonly trunks: SqliteNumberedDocuments<SipTrunk, SipTrunkFilter>;

  constructor(
    private readonly db: Db,
    box: SecretBox,
  ) {
    this.trunks = new SqliteNumberedDocuments(db, box, SIP_TRUNKS);
  }

  insert(orgId: string, t: SipTrunk): void {
    this.trunks.insert(orgId, t);
  }

  get(orgId: string, id: string): SipTrunk | undefined {
    return this.trunks.get(orgId, id);
  }

  update(orgId: string, t: SipTrunk): boolean {
    return this.trunks.update(orgId, t);
  }

  delete(orgId: string, id: string): boolean {
    return this.trunks.delete(orgId, id);
  }

  list(orgId: string, query: ListSipTrunksQuery): SipTrunkPage {
    return trunkPage(this.trunks.list(orgId, query));
  }

  byNumber(number: string): OwnedSipTrunk | undefined {
    return ownedTrunk(this.trunks.byNumber(number));
  }

  anyWithCredentials(): boolean {
    return (
      this.db
        .prepare("SELECT 1 FROM sip_trunks WHERE json_extract(trunk, '$.inbound.username') IS NOT NULL LIMIT 1")
        .get() !== undefined
    );
  }
}
