// SIP trunks on PostgreSQL: the same documents and tables as on SQLite (store/sip-trunks.ts), each number claimed
// under its own lock (postgres/numbered-documents.ts).
import type { OwnedSipTrunk, SipTrunkPage, SipTrunkRepository } from '../../sip-trunks/repository.ts';
import type { ListSipTrunksQuery, SipTrunk } from '../../sip-trunks/schema.ts';
import type { SecretBox } from '../../secrets/sealed.ts';
import { ownedTrunk, SIP_TRUNKS, trunkPage } from '../sip-trunks.ts';
import type { PgDb } from './db.ts';
import { PgNumberedDocuments } from './numbered-documents.ts';

export class PgSipTrunkRepository implements SipTrunkRepository {
  private readonly trunks: PgNumberedDocuments<SipTrunk, NonNullable<ListSipTrunksQuery['filter_criteria']>>;

  constructor(
    private readonly db: PgDb,
    box: SecretBox,
  ) {
    this.trunks = new PgNumberedDocuments(db, box, SIP_TRUNKS);
  }

  insert(orgId: string, t: SipTrunk): Promise<void> {
    return this.trunks.insert(orgId, t);
  }

  get(orgId: string, id: string): Promise<SipTrunk | undefined> {
    return this.trunks.get(orgId, id);
  }

  update(orgId: string, t: SipTrunk): Promise<boolean> {
    return this.trunks.update(orgId, t);
  }

  delete(orgId: string, id: string): Promise<boolean> {
    return this.trunks.delete(orgId, id);
  }

  async list(orgId: string, query: ListSipTrunksQuery): Promise<SipTrunkPage> {
    return trunkPage(await this.trunks.list(orgId, query));
  }

  async byNumber(number: string): Promise<OwnedSipTrunk | undefined> {
    return ownedTrunk(await this.trunks.byNumber(number));
  }

  async anyWithCredentials(): Promise<boolean> {
    const row = await this.db.row(
      "SELECT 1 AS one FROM sip_trunks WHERE (trunk::jsonb -> 'inbound' ->> 'username') IS NOT NULL LIMIT 1",
    );
    return row !== undefined;
  }
}
