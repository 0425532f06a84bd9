// The PostgreSQL connection pool as the repositories use it: SQL written with `?` placeholders
// (as for SQLite, numbered here), BIGINT read as a JavaScript number (epoch milliseconds and
// counters, all far below 2^53), and transactions on one pooled client.
import pg from 'pg';
import type { Migration } from '../database.ts';

export type Param = string | number | boolean | null | readonly string[];

/** What a repository method runs its SQL on: the pool, or the client of a transaction. */
export interface Queryable {
  rows<R>(sql: string, params?: readonly Param[]): Promise<R[]>;
  /** The first row, or undefined. */
  row<R>(sql: string, params?: readonly Param[]): Promise<R | undefined>;
  /** Rows changed. */
  run(sql: string, params?: readonly Param[]): Promise<number>;
}

/** `?` placeholders as PostgreSQL's $1, $2, … (no statement here has a literal question mark). */
export function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

const BIGINT_OID = 20;
const NUMERIC_OID = 1700;
const types = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') =>
    oid === BIGINT_OID || oid === NUMERIC_OID
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format as 'text'),
};

function queryable(run: (sql: string, params: readonly Param[]) => Promise<pg.QueryResult>): Queryable {
  return {
    async rows<R>(sql: string, params: readonly Param[] = []) {
      return (await run(numbered(sql), params)).rows as R[];
    },
    async row<R>(sql: string, params: readonly Param[] = []) {
      return (await run(numbered(sql), params)).rows[0] as R | undefined;
    },
    async run(sql: string, params: readonly Param[] = []) {
      return (await run(numbered(sql), params)).rowCount ?? 0;
    },
  };
}

export class PgDb implements Queryable {
  readonly pool: pg.Pool;
  private readonly direct: Queryable;

  constructor(url: string, options: { max?: number } = {}) {
    this.pool = new pg.Pool({ connectionString: url, max: options.max ?? 10, types });
    // An idle client the server dropped must not take the process down: the next query reconnects.
    this.pool.on('error', () => undefined);
    this.direct = queryable((sql, params) => this.pool.query(sql, params.length > 0 ? (params as Param[]) : undefined));
  }

  rows<R>(sql: string, params?: readonly Param[]): Promise<R[]> {
    return this.direct.rows<R>(sql, params);
  }

  row<R>(sql: string, params?: readonly Param[]): Promise<R | undefined> {
    return this.direct.row<R>(sql, params);
  }

  run(sql: string, params?: readonly Param[]): Promise<number> {
    return this.direct.run(sql, params);
  }

  /** `work` in one transaction on one client: committed when it resolves, rolled back when it throws. */
  async transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      // Without parameters a text may hold several statements (a migration).
      const result = await work(
        queryable((sql, params) => client.query(sql, params.length > 0 ? (params as Param[]) : undefined)),
      );
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}

/**
 * Serializes, until the transaction ends, every transaction that takes the same lock (an organization's slots, one
 * agent's versions).
 */
export function lockFor(tx: Queryable, key: string): Promise<unknown> {
  return tx.row('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [key]);
}

/** Applies the migrations not yet applied; nodes starting together take turns (an advisory lock). */
export async function migratePg(db: PgDb, migrations: Migration[]): Promise<number> {
  return db.transaction(async (tx) => {
    await lockFor(tx, 'voicecall:migrations');
    await tx.run(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)',
    );
    const applied = new Set(
      (await tx.rows<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => r.version),
    );
    let count = 0;
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (applied.has(m.version)) continue;
      await tx.run(m.sql);
      await tx.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [
        m.version,
        m.name,
        Date.now(),
      ]);
      count++;
    }
    return count;
  });
}
