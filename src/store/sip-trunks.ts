// SIP trunks on SQLite: each a JSON document (its passwords sealed) under the columns it is found by. Its numbers
// are claimed for the organization in number_owners (as agents' and carrier accounts' are) and listed in
// sip_trunk_numbers, one trunk each, in the same transaction as the trunk itself.
import { NumberOnAnotherTrunkError, type OwnedSipTrunk, type SipTrunkPage } from '../sip-trunks/repository.ts';
import { SIP_TRUNK_SECRETS, type ListSipTrunksQuery, type SipTrunk } from '../sip-trunks/schema.ts';
import type { SecretBox } from '../secrets/sealed.ts';
import type { Db } from './database.ts';
import { claimNumberSqlite, RELEASE_UNLISTED_NUMBERS_SQLITE } from './numbers.ts';
import { keysetPage, ListWhere, queryFingerprint } from './paging.ts';

export interface SipTrunkRow {
  sip_trunk_id: string;
  created_at: number;
  trunk: string;
}

/** The trunk column: its passwords sealed. */
export const storedTrunk = (trunk: SipTrunk, box: SecretBox): string =>
  JSON.stringify(SIP_TRUNK_SECRETS.seal(trunk, box));

/** A stored trunk as the SIP carrier uses it: its passwords opened. */
export const openedTrunk = (text: string, box: SecretBox): SipTrunk =>
  SIP_TRUNK_SECRETS.open(JSON.parse(text) as SipTrunk, box);

/** A page of an organization's trunks as both stores fetch it: the WHERE, the keyset and the cursor. */
export function sipTrunkListPage(orgId: string, query: ListSipTrunksQuery) {
  const filter = query.filter_criteria ?? {};
  const where = new ListWhere('org_id = ?', orgId).anyOf('name', filter.name);
  return {
    where: where.sql,
    params: where.params,
    order: query.sort_order,
    sortColumn: 'created_at',
    idColumn: 'sip_trunk_id',
    limit: query.limit,
    paginationKey: query.pagination_key,
    fingerprint: queryFingerprint(['sip_trunks', filter, query.sort_order]),
    cursorOf: (row: SipTrunkRow) => ({ sortKey: row.created_at, id: row.sip_trunk_id }),
  };
}

export const BY_NUMBER_SQL = `SELECT t.org_id, t.trunk FROM sip_trunk_numbers n
  JOIN sip_trunks t ON t.sip_trunk_id = n.sip_trunk_id WHERE n.number = ?`;

export class SqliteSipTrunkRepository {
  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
  ) {}

  insert(orgId: string, t: SipTrunk): void {
    this.db
      .transaction(() => {
        this.claimNumbers(orgId, t);
        this.db
          .prepare('INSERT INTO sip_trunks (sip_trunk_id, org_id, name, created_at, trunk) VALUES (?, ?, ?, ?, ?)')
          .run(t.sip_trunk_id, orgId, t.name, t.created_at, storedTrunk(t, this.box));
      })
      .immediate();
  }

  get(orgId: string, id: string): SipTrunk | undefined {
    const row = this.db.prepare('SELECT trunk FROM sip_trunks WHERE org_id = ? AND sip_trunk_id = ?').get(orgId, id) as
      { trunk: string } | undefined;
    return row ? openedTrunk(row.trunk, this.box) : undefined;
  }

  update(orgId: string, t: SipTrunk): boolean {
    return this.db
      .transaction(() => {
        const changed = this.db
          .prepare('UPDATE sip_trunks SET name = ?, trunk = ? WHERE org_id = ? AND sip_trunk_id = ?')
          .run(t.name, storedTrunk(t, this.box), orgId, t.sip_trunk_id).changes;
        if (changed !== 1) return false;
        this.claimNumbers(orgId, t);
        return true;
      })
      .immediate();
  }

  delete(orgId: string, id: string): boolean {
    return this.db
      .transaction(() => {
        const deleted = this.db
          .prepare('DELETE FROM sip_trunks WHERE org_id = ? AND sip_trunk_id = ?')
          .run(orgId, id).changes;
        if (deleted !== 1) return false;
        this.db.prepare('DELETE FROM sip_trunk_numbers WHERE sip_trunk_id = ?').run(id);
        this.db.prepare(RELEASE_UNLISTED_NUMBERS_SQLITE).run(orgId, orgId, orgId, orgId);
        return true;
      })
      .immediate();
  }

  list(orgId: string, query: ListSipTrunksQuery): SipTrunkPage {
    const options = sipTrunkListPage(orgId, query);
    const total = this.db
      .prepare(`SELECT count(*) AS n FROM sip_trunks WHERE ${options.where}`)
      .get(...options.params) as { n: number };
    const page = keysetPage({
      ...options,
      fetch: (where, all, order, limit) =>
        this.db
          .prepare(`SELECT sip_trunk_id, created_at, trunk FROM sip_trunks WHERE ${where} ${order} LIMIT ?`)
          .all(...all, limit) as SipTrunkRow[],
    });
    return {
      trunks: page.rows.map((row) => openedTrunk(row.trunk, this.box)),
      nextCursor: page.nextCursor,
      totalCount: total.n,
    };
  }

  byNumber(number: string): OwnedSipTrunk | undefined {
    const row = this.db.prepare(BY_NUMBER_SQL).get(number) as { org_id: string; trunk: string } | undefined;
    return row ? { orgId: row.org_id, trunk: openedTrunk(row.trunk, this.box) } : undefined;
  }

  anyWithCredentials(): boolean {
    return (
      this.db
        .prepare("SELECT 1 FROM sip_trunks WHERE json_extract(trunk, '$.inbound.username') IS NOT NULL LIMIT 1")
        .get() !== undefined
    );
  }

  /** Inside the caller's transaction: the trunk's numbers become its own (and the organization's), the rest go. */
  private claimNumbers(orgId: string, t: SipTrunk): void {
    for (const number of t.numbers) {
      claimNumberSqlite(this.db, number, orgId, t.updated_at);
      const holder = this.db.prepare('SELECT sip_trunk_id FROM sip_trunk_numbers WHERE number = ?').get(number) as
        { sip_trunk_id: string } | undefined;
      if (holder && holder.sip_trunk_id !== t.sip_trunk_id)
        throw new NumberOnAnotherTrunkError(number, holder.sip_trunk_id);
    }
    this.db.prepare('DELETE FROM sip_trunk_numbers WHERE sip_trunk_id = ?').run(t.sip_trunk_id);
    const add = this.db.prepare('INSERT INTO sip_trunk_numbers (number, org_id, sip_trunk_id) VALUES (?, ?, ?)');
    for (const number of t.numbers) add.run(number, orgId, t.sip_trunk_id);
    this.db.prepare(RELEASE_UNLISTED_NUMBERS_SQLITE).run(orgId, orgId, orgId, orgId);
  }
}
