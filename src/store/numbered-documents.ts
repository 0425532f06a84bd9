// Records kept as one JSON document per row, their secrets sealed, under the columns they are found by, whose numbers
// are theirs alone: carrier accounts and SIP trunks. A record's numbers are claimed for its organization in
// number_owners (as agents' are: numbers.ts) and listed in its own numbers table, one record each, in the same
// transaction as the record itself. The statements are written once here; each store runs them (SQLite synchronously,
// PostgreSQL with each number claimed under its own lock, so two nodes cannot both take one).
import { NumberHeldElsewhereError } from '../agents/repository.ts';
import type { SecretFields } from '../secrets/fields.ts';
import type { SecretBox } from '../secrets/sealed.ts';
import type { Db } from './database.ts';
import { claimNumberSqlite, RELEASE_UNLISTED_NUMBERS_SQLITE } from './numbers.ts';
import { keysetPage, ListWhere, queryFingerprint, type SortOrder } from './paging.ts';

/** What every such record has. */
export interface NumberedDocument {
  name: string;
  numbers: string[];
  created_at: number;
  updated_at: number;
}

/** A list request: filters by the kind's columns, keyset pages by created_at (ties by id). */
export interface NumberedDocumentQuery<F> {
  filter_criteria?: F | undefined;
  sort_order: SortOrder;
  limit: number;
  pagination_key?: string | null | undefined;
}

/** One kind of record: where it is kept and how it is told apart. */
export interface NumberedDocumentKind<T extends NumberedDocument, F> {
  readonly table: string;
  readonly idColumn: string;
  /** The column holding the JSON document. */
  readonly documentColumn: string;
  /** number → record id, one record per number. */
  readonly numbersTable: string;
  /** The columns kept beside name for lists to filter on (a carrier account's carrier), in the table's order. */
  readonly columns: readonly string[];
  readonly secrets: SecretFields;
  id(document: T): string;
  /** Values of `columns`. */
  columnValues(document: T): string[];
  /** The list filter's WHERE beyond the organization. */
  filter(where: ListWhere, criteria: F): ListWhere;
  /** What one is called, in the error that says a number is on another of the organization's. */
  readonly holder: string;
}

export interface NumberedDocumentPage<T> {
  documents: T[];
  nextCursor: string | null;
  totalCount: number;
}

/** A record with the organization it belongs to (found by number or id alone, as a carrier's request finds it). */
export interface OwnedDocument<T> {
  orgId: string;
  document: T;
}

export interface NumberedDocumentRow {
  id: string;
  created_at: number;
  document: string;
}

/** The statements of one kind, and the document's way into and out of its column. */
export class NumberedDocumentSql<T extends NumberedDocument, F> {
  readonly insert: string;
  readonly get: string;
  readonly update: string;
  readonly delete: string;
  readonly deleteNumbers: string;
  readonly holder: string;
  readonly addNumber: string;
  readonly byNumber: string;
  readonly find: string;

  constructor(
    readonly kind: NumberedDocumentKind<T, F>,
    private readonly box: SecretBox,
  ) {
    const { table, idColumn: id, documentColumn: doc, numbersTable: numbers } = kind;
    const columns = ['name', ...kind.columns];
    this.insert = `INSERT INTO ${table} (${id}, org_id, ${columns.join(', ')}, created_at, ${doc}) VALUES (?, ?, ${columns.map(() => '?').join(', ')}, ?, ?)`;
    this.get = `SELECT ${doc} AS document FROM ${table} WHERE org_id = ? AND ${id} = ?`;
    this.update = `UPDATE ${table} SET name = ?, ${doc} = ? WHERE org_id = ? AND ${id} = ?`;
    this.delete = `DELETE FROM ${table} WHERE org_id = ? AND ${id} = ?`;
    this.deleteNumbers = `DELETE FROM ${numbers} WHERE ${id} = ?`;
    this.holder = `SELECT ${id} AS id FROM ${numbers} WHERE number = ?`;
    this.addNumber = `INSERT INTO ${numbers} (number, org_id, ${id}) VALUES (?, ?, ?)`;
    this.byNumber = `SELECT d.org_id, d.${doc} AS document FROM ${numbers} n JOIN ${table} d ON d.${id} = n.${id} WHERE n.number = ?`;
    this.find = `SELECT org_id, ${doc} AS document FROM ${table} WHERE ${id} = ?`;
  }

  insertParams(orgId: string, d: T): (string | number)[] {
    return [this.kind.id(d), orgId, d.name, ...this.kind.columnValues(d), d.created_at, this.stored(d)];
  }

  updateParams(orgId: string, d: T): (string | number)[] {
    return [d.name, this.stored(d), orgId, this.kind.id(d)];
  }

  /** The document column: its secrets sealed. */
  stored(d: T): string {
    return JSON.stringify(this.kind.secrets.seal(d, this.box));
  }

  /** A stored document as the runtime uses it: its secrets opened. */
  opened(text: string): T {
    return this.kind.secrets.open(JSON.parse(text) as T, this.box);
  }

  owned(row: { org_id: string; document: string } | undefined): OwnedDocument<T> | undefined {
    return row ? { orgId: row.org_id, document: this.opened(row.document) } : undefined;
  }

  /** A page of an organization's records as both stores fetch it: the WHERE, the keyset and the cursor. */
  listPage(orgId: string, query: NumberedDocumentQuery<F>) {
    const where = query.filter_criteria
      ? this.kind.filter(new ListWhere('org_id = ?', orgId), query.filter_criteria)
      : new ListWhere('org_id = ?', orgId);
    return {
      where: where.sql,
      params: where.params,
      order: query.sort_order,
      sortColumn: 'created_at',
      idColumn: this.kind.idColumn,
      limit: query.limit,
      paginationKey: query.pagination_key,
      fingerprint: queryFingerprint([this.kind.table, query.filter_criteria ?? {}, query.sort_order]),
      cursorOf: (row: NumberedDocumentRow) => ({ sortKey: row.created_at, id: row.id }),
      count: `SELECT count(*) AS n FROM ${this.kind.table} WHERE ${where.sql}`,
      select: (keyset: string, order: string) =>
        `SELECT ${this.kind.idColumn} AS id, created_at, ${this.kind.documentColumn} AS document FROM ${this.kind.table} WHERE ${keyset} ${order} LIMIT ?`,
    };
  }
}

export class SqliteNumberedDocuments<T extends NumberedDocument, F> {
  private readonly sql: NumberedDocumentSql<T, F>;

  constructor(
    private readonly db: Db,
    box: SecretBox,
    kind: NumberedDocumentKind<T, F>,
  ) {
    this.sql = new NumberedDocumentSql(kind, box);
  }

  insert(orgId: string, d: T): void {
    this.db
      .transaction(() => {
        this.claimNumbers(orgId, d);
        this.db.prepare(this.sql.insert).run(...this.sql.insertParams(orgId, d));
      })
      .immediate();
  }

  get(orgId: string, id: string): T | undefined {
    const row = this.db.prepare(this.sql.get).get(orgId, id) as { document: string } | undefined;
    return row ? this.sql.opened(row.document) : undefined;
  }

  update(orgId: string, d: T): boolean {
    return this.db
      .transaction(() => {
        if (this.db.prepare(this.sql.update).run(...this.sql.updateParams(orgId, d)).changes !== 1) return false;
        this.claimNumbers(orgId, d);
        return true;
      })
      .immediate();
  }

  delete(orgId: string, id: string): boolean {
    return this.db
      .transaction(() => {
        if (this.db.prepare(this.sql.delete).run(orgId, id).changes !== 1) return false;
        this.db.prepare(this.sql.deleteNumbers).run(id);
        this.db.prepare(RELEASE_UNLISTED_NUMBERS_SQLITE).run(orgId, orgId, orgId, orgId);
        return true;
      })
      .immediate();
  }

  list(orgId: string, query: NumberedDocumentQuery<F>): NumberedDocumentPage<T> {
    const options = this.sql.listPage(orgId, query);
    const total = this.db.prepare(options.count).get(...options.params) as { n: number };
    const page = keysetPage({
      ...options,
      fetch: (where, all, order, limit) =>
        this.db.prepare(options.select(where, order)).all(...all, limit) as NumberedDocumentRow[],
    });
    return {
      documents: page.rows.map((row) => this.sql.opened(row.document)),
      nextCursor: page.nextCursor,
      totalCount: total.n,
    };
  }

  byNumber(number: string): OwnedDocument<T> | undefined {
    return this.sql.owned(this.db.prepare(this.sql.byNumber).get(number) as { org_id: string; document: string });
  }

  find(id: string): OwnedDocument<T> | undefined {
    return this.sql.owned(this.db.prepare(this.sql.find).get(id) as { org_id: string; document: string });
  }

  /** Inside the caller's transaction: the record's numbers become its own (and the organization's), the rest go. */
  private claimNumbers(orgId: string, d: T): void {
    const id = this.sql.kind.id(d);
    for (const number of d.numbers) {
      claimNumberSqlite(this.db, number, orgId, d.updated_at);
      const holder = this.db.prepare(this.sql.holder).get(number) as { id: string } | undefined;
      if (holder && holder.id !== id)
        throw new NumberHeldElsewhereError(number, `${this.sql.kind.holder} ${holder.id}`);
    }
    this.db.prepare(this.sql.deleteNumbers).run(id);
    const add = this.db.prepare(this.sql.addNumber);
    for (const number of d.numbers) add.run(number, orgId, id);
    this.db.prepare(RELEASE_UNLISTED_NUMBERS_SQLITE).run(orgId, orgId, orgId, orgId);
  }
}
