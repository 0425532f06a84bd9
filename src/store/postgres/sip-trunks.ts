// SIP trunks on PostgreSQL: the same documents and tables as on SQLite (store/sip-trunks.ts); each number is
// claimed under its own lock (store/numbers.ts), so two nodes cannot both take one.
import {
  NumberOnAnotherTrunkError,
  type OwnedSipTrunk,
  type SipTrunkPage,
  type SipTrunkRepository,
} from '../../sip-trunks/repository.ts';
import type { ListSipTrunksQuery, SipTrunk } from '../../sip-trunks/schema.ts';
import type { SecretBox } from '../../secrets/sealed.ts';
import { claimNumberPg, RELEASE_UNLISTED_NUMBERS_PG } from '../numbers.ts';
import { keysetPageAsync } from '../paging.ts';
import { BY_NUMBER_SQL, openedTrunk, sipTrunkListPage, storedTrunk, type SipTrunkRow } from '../sip-trunks.ts';
import type { PgDb, Queryable } from './db.ts';

export class PgSipTrunkRepository implements SipTrunkRepository {
  constructor(
    private readonly db: PgDb,
    private readonly box: SecretBox,
  ) {}

  insert(orgId: string, t: SipTrunk): Promise<void> {
    return this.db.transaction(async (tx) => {
      await this.claimNumbers(tx, orgId, t);
      await tx.run('INSERT INTO sip_trunks (sip_trunk_id, org_id, name, created_at, trunk) VALUES (?, ?, ?, ?, ?)', [
        t.sip_trunk_id,
        orgId,
        t.name,
        t.created_at,
        storedTrunk(t, this.box),
      ]);
    });
  }

  async get(orgId: string, id: string): Promise<SipTrunk | undefined> {
    const row = await this.db.row<{ trunk: string }>(
      'SELECT trunk FROM sip_trunks WHERE org_id = ? AND sip_trunk_id = ?',
      [orgId, id],
    );
    return row ? openedTrunk(row.trunk, this.box) : undefined;
  }

  update(orgId: string, t: SipTrunk): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const changed = await tx.run('UPDATE sip_trunks SET name = ?, trunk = ? WHERE org_id = ? AND sip_trunk_id = ?', [
        t.name,
        storedTrunk(t, this.box),
        orgId,
        t.sip_trunk_id,
      ]);
      if (changed !== 1) return false;
      await this.claimNumbers(tx, orgId, t);
      return true;
    });
  }

  delete(orgId: string, id: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const deleted = await tx.run('DELETE FROM sip_trunks WHERE org_id = ? AND sip_trunk_id = ?', [orgId, id]);
      if (deleted !== 1) return false;
      await tx.run('DELETE FROM sip_trunk_numbers WHERE sip_trunk_id = ?', [id]);
      await tx.run(RELEASE_UNLISTED_NUMBERS_PG, [orgId, orgId, orgId, orgId]);
      return true;
    });
  }

  async list(orgId: string, query: ListSipTrunksQuery): Promise<SipTrunkPage> {
    const options = sipTrunkListPage(orgId, query);
    const total = await this.db.row<{ n: number }>(
      `SELECT count(*) AS n FROM sip_trunks WHERE ${options.where}`,
      options.params,
    );
    const page = await keysetPageAsync({
      ...options,
      fetch: (where, all, order, limit) =>
        this.db.rows<SipTrunkRow>(
          `SELECT sip_trunk_id, created_at, trunk FROM sip_trunks WHERE ${where} ${order} LIMIT ?`,
          [...all, limit],
        ),
    });
    return {
      trunks: page.rows.map((row) => openedTrunk(row.trunk, this.box)),
      nextCursor: page.nextCursor,
      totalCount: Number(total?.n ?? 0),
    };
  }

  async byNumber(number: string): Promise<OwnedSipTrunk | undefined> {
    const row = await this.db.row<{ org_id: string; trunk: string }>(BY_NUMBER_SQL, [number]);
    return row ? { orgId: row.org_id, trunk: openedTrunk(row.trunk, this.box) } : undefined;
  }

  async anyWithCredentials(): Promise<boolean> {
    const row = await this.db.row(
      "SELECT 1 AS one FROM sip_trunks WHERE (trunk::jsonb -> 'inbound' ->> 'username') IS NOT NULL LIMIT 1",
    );
    return row !== undefined;
  }

  /** Inside the caller's transaction: the trunk's numbers become its own (and the organization's), the rest go. */
  private async claimNumbers(tx: Queryable, orgId: string, t: SipTrunk): Promise<void> {
    for (const number of t.numbers) {
      await claimNumberPg(tx, number, orgId, t.updated_at);
      const holder = await tx.row<{ sip_trunk_id: string }>(
        'SELECT sip_trunk_id FROM sip_trunk_numbers WHERE number = ?',
        [number],
      );
      if (holder && holder.sip_trunk_id !== t.sip_trunk_id)
        throw new NumberOnAnotherTrunkError(number, holder.sip_trunk_id);
    }
    await tx.run('DELETE FROM sip_trunk_numbers WHERE sip_trunk_id = ?', [t.sip_trunk_id]);
    for (const number of t.numbers)
      await tx.run('INSERT INTO sip_trunk_numbers (number, org_id, sip_trunk_id) VALUES (?, ?, ?)', [
        number,
        orgId,
        t.sip_trunk_id,
      ]);
    await tx.run(RELEASE_UNLISTED_NUMBERS_PG, [orgId, orgId, orgId, orgId]);
  }
}
