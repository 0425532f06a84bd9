// Requests counted per organization and minute in the store, so RATE_LIMIT_PER_MINUTE holds for
// the whole service, however many processes and machines share the store: one statement counts a
// request and starts a new window when the last one is over.
import type { Db } from './database.ts';
import type { Promised } from './promised.ts';

export const RATE_WINDOW_MS = 60_000;

export interface RateWindow {
  /** When this window began (the first request after the last window ended). */
  start: number;
  /** Requests counted in it, this one included. */
  count: number;
}

/** The statement both stores run: PostgreSQL and SQLite take the same words here. */
export const RATE_HIT_SQL = `
  INSERT INTO rate_windows (key, window_start, count) VALUES (?, ?, 1)
  ON CONFLICT (key) DO UPDATE SET
    count = CASE WHEN excluded.window_start - rate_windows.window_start >= ${RATE_WINDOW_MS} THEN 1 ELSE rate_windows.count + 1 END,
    window_start = CASE WHEN excluded.window_start - rate_windows.window_start >= ${RATE_WINDOW_MS} THEN excluded.window_start ELSE rate_windows.window_start END
  RETURNING window_start, count`;

/** Where request windows are counted: SQLite here, PostgreSQL in postgres/. */
export type RateWindowStore = Promised<SqliteRateWindowStore>;

export class SqliteRateWindowStore {
  constructor(private readonly db: Db) {}

  /** Counts one request under `key` at `now`. */
  hit(key: string, now: number): RateWindow {
    const row = this.db.prepare(RATE_HIT_SQL).get(key, now) as { window_start: number; count: number };
    return { start: row.window_start, count: row.count };
  }
}
