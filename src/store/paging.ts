// Opaque keyset cursors: the sort key and id of the last row served, bound to the filter and
// order they were made for, so a cursor reused with another query is refused, not misread.
import { createHash } from 'node:crypto';
import { ApiError } from '../errors.ts';

export type SortOrder = 'ascending' | 'descending';

/** The WHERE of a list, the same SQL for both stores: each key's values OR'ed (none matches nothing), keys AND'ed. */
export class ListWhere {
  private readonly parts: string[];
  readonly params: (string | number)[];

  constructor(first: string, ...params: (string | number)[]) {
    this.parts = [first];
    this.params = params;
  }

  anyOf(column: string, values: readonly (string | number)[] | undefined): this {
    if (values === undefined) return this;
    if (values.length === 0) this.parts.push('FALSE');
    else {
      this.parts.push(`${column} IN (${values.map(() => '?').join(', ')})`);
      this.params.push(...values);
    }
    return this;
  }

  range(
    column: string,
    range: { lower_threshold?: number | undefined; upper_threshold?: number | undefined } | undefined,
  ): this {
    if (range?.lower_threshold !== undefined) {
      this.parts.push(`${column} >= ?`);
      this.params.push(range.lower_threshold);
    }
    if (range?.upper_threshold !== undefined) {
      this.parts.push(`${column} <= ?`);
      this.params.push(range.upper_threshold);
    }
    return this;
  }

  and(condition: string): this {
    this.parts.push(condition);
    return this;
  }

  get sql(): string {
    return this.parts.join(' AND ');
  }
}

export interface Cursor {
  sortKey: number;
  id: string;
}

export function queryFingerprint(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 12);
}

export function encodeCursor(cursor: Cursor, fingerprint: string): string {
  return Buffer.from(JSON.stringify([1, cursor.sortKey, cursor.id, fingerprint])).toString('base64url');
}

export function decodeCursor(key: string, fingerprint: string): Cursor {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(key, 'base64url').toString('utf8'));
  } catch {
    throw new ApiError('BAD_PAGINATION_KEY', 'pagination_key is not a cursor this service issued');
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 4 ||
    parsed[0] !== 1 ||
    !Number.isSafeInteger(parsed[1]) ||
    typeof parsed[2] !== 'string' ||
    typeof parsed[3] !== 'string'
  ) {
    throw new ApiError('BAD_PAGINATION_KEY', 'pagination_key is not a cursor this service issued');
  }
  if (parsed[3] !== fingerprint) {
    throw new ApiError(
      'BAD_PAGINATION_KEY',
      'pagination_key was issued for other filter_criteria or sort_order; pass the same ones',
    );
  }
  return { sortKey: parsed[1] as number, id: parsed[2] as string };
}

/** SQL for "after the cursor" in the given order over (sortColumn, idColumn). */
export function keysetClause(order: SortOrder, sortColumn: string, idColumn: string): string {
  const op = order === 'descending' ? '<' : '>';
  return `(${sortColumn} ${op} ? OR (${sortColumn} = ? AND ${idColumn} ${op} ?))`;
}

export function orderClause(order: SortOrder, sortColumn: string, idColumn: string): string {
  const dir = order === 'descending' ? 'DESC' : 'ASC';
  return `ORDER BY ${sortColumn} ${dir}, ${idColumn} ${dir}`;
}

interface KeysetOptions<R> {
  where: string;
  params: (string | number)[];
  order: SortOrder;
  sortColumn: string;
  idColumn: string;
  limit: number;
  paginationKey: string | null | undefined;
  fingerprint: string;
  cursorOf: (row: R) => Cursor;
}

/** The WHERE (after the cursor), its params, the ORDER BY and the row count (limit + 1) of a keyset page. */
function keysetQuery<R>(options: KeysetOptions<R>): {
  where: string;
  params: (string | number)[];
  order: string;
  limit: number;
} {
  const where = [options.where];
  const params = [...options.params];
  if (options.paginationKey) {
    const cursor = decodeCursor(options.paginationKey, options.fingerprint);
    where.push(keysetClause(options.order, options.sortColumn, options.idColumn));
    params.push(cursor.sortKey, cursor.sortKey, cursor.id);
  }
  return {
    where: where.join(' AND '),
    params,
    order: orderClause(options.order, options.sortColumn, options.idColumn),
    limit: options.limit + 1,
  };
}

/** The page of the rows fetched: the extra row tells whether a next page exists. */
function keysetRows<R>(rows: R[], options: KeysetOptions<R>): { rows: R[]; nextCursor: string | null } {
  const page = rows.slice(0, options.limit);
  const last = page.at(-1);
  return {
    rows: page,
    nextCursor: rows.length > options.limit && last ? encodeCursor(options.cursorOf(last), options.fingerprint) : null,
  };
}

/**
 * One keyset page over (sortColumn, idColumn): `fetch` runs the query with the WHERE, params
 * and ORDER BY it is given and limit + 1 rows; the extra row tells whether a next page exists.
 */
export function keysetPage<R>(
  options: KeysetOptions<R> & {
    fetch: (where: string, params: (string | number)[], order: string, limit: number) => R[];
  },
): {
  rows: R[];
  nextCursor: string | null;
} {
  const q = keysetQuery(options);
  return keysetRows(options.fetch(q.where, q.params, q.order, q.limit), options);
}

/** keysetPage for a store whose queries are round trips (PostgreSQL). */
export async function keysetPageAsync<R>(
  options: KeysetOptions<R> & {
    fetch: (where: string, params: (string | number)[], order: string, limit: number) => Promise<R[]>;
  },
): Promise<{ rows: R[]; nextCursor: string | null }> {
  const q = keysetQuery(options);
  return keysetRows(await options.fetch(q.where, q.params, q.order, q.limit), options);
}
