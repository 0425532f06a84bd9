// Carrier accounts and SIP trunks on PostgreSQL: the statements of store/numbered-documents.ts, each number claimed
// under its own lock (store/numbers.ts), so two nodes cannot both take one.
import { NumberHeldElsewhereError } from '../../agents/repository.ts';
import type { SecretBox } from '../../secrets/sealed.ts';
import {
  NumberedDocumentSql,
  type NumberedDocument,
  type NumberedDocumentKind,
  type NumberedDocumentPage,
  type NumberedDocumentQuery,
  type NumberedDocumentRow,
  type OwnedDocument,
} from '../numbered-documents.ts';
import { claimNumberPg, RELEASE_UNLISTED_NUMBERS_PG } from '../numbers.ts';
import { keysetPageAsync } from '../paging.ts';
import type { PgDb, Queryable } from './db.ts';

export class PgNumberedDocuments<T extends NumberedDocument, F> {
  private readonly sql: NumberedDocumentSql<T, F>;

  constructor(
    private readonly db: PgDb,
    box: SecretBox,
    kind: NumberedDocumentKind<T, F>,
  ) {
    this.sql = new NumberedDocumentSql(kind, box);
  }

  insert(orgId: string, d: T): Promise<void> {
    return this.db.transaction(async (tx) => {
      await this.claimNumbers(tx, orgId, d);
      await tx.run(this.sql.insert, this.sql.insertParams(orgId, d));
    });
  }

  async get(orgId: string, id: string): Promise<T | undefined> {
    const row = await this.db.row<{ document: string }>(this.sql.get, [orgId, id]);
    return row ? this.sql.opened(row.document) : undefined;
  }

  update(orgId: string, d: T): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      if ((await tx.run(this.sql.update, this.sql.updateParams(orgId, d))) !== 1) return false;
      await this.claimNumbers(tx, orgId, d);
      return true;
    });
  }

  delete(orgId: string, id: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      if ((await tx.run(this.sql.delete, [orgId, id])) !== 1) return false;
      await tx.run(this.sql.deleteNumbers, [id]);
      await tx.run(RELEASE_UNLISTED_NUMBERS_PG, [orgId, orgId, orgId, orgId]);
      return true;
    });
  }

  async list(orgId: string, query: NumberedDocumentQuery<F>): Promise<NumberedDocumentPage<T>> {
    const options = this.sql.listPage(orgId, query);
    const total = await this.db.row<{ n: number }>(options.count, options.params);
    const page = await keysetPageAsync({
      ...options,
      fetch: (where, all, order, limit) =>
        this.db.rows<NumberedDocumentRow>(options.select(where, order), [...all, limit]),
    });
    return {
      documents: page.rows.map((row) => this.sql.opened(row.document)),
      nextCursor: page.nextCursor,
      totalCount: Number(total?.n ?? 0),
    };
  }

  async byNumber(number: string): Promise<OwnedDocument<T> | undefined> {
    return this.sql.owned(await this.db.row<{ org_id: string; document: string }>(this.sql.byNumber, [number]));
  }

  async find(id: string): Promise<OwnedDocument<T> | undefined> {
    return this.sql.owned(await this.db.row<{ org_id: string; document: string }>(this.sql.find, [id]));
  }

  /** Inside the caller's transaction: the record's numbers become its own (and the organization's), the rest go. */
  private async claimNumbers(tx: Queryable, orgId: string, d: T): Promise<void> {
    const id = this.sql.kind.id(d);
    for (const number of d.numbers) {
      await claimNumberPg(tx, number, orgId, d.updated_at);
      const holder = await tx.row<{ id: string }>(this.sql.holder, [number]);
      if (holder && holder.id !== id)
        throw new NumberHeldElsewhereError(number, `${this.sql.kind.holder} ${holder.id}`);
    }
    await tx.run(this.sql.deleteNumbers, [id]);
    for (const number of d.numbers) await tx.run(this.sql.addNumber, [number, orgId, id]);
    await tx.run(RELEASE_UNLISTED_NUMBERS_PG, [orgId, orgId, orgId, orgId]);
  }
}
