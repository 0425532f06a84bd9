// Answers kept by idempotency key for a day, so a client (or a carrier) that retries a request
// whose answer it never saw gets that answer again instead of a second phone call.
import type { Db } from './database.ts';
import type { Promised } from './promised.ts';

/** How long a key is remembered: a retry after a day is a new request. */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
/** Expired keys are swept at most this often, on the way in. */
export const SWEEP_EVERY_MS = 60_000;

export interface StoredAnswer {
  status: number;
  body: string;
}

export type IdempotencyClaim =
  /** The key is new and now held by this request: finish or release it. */
  | { kind: 'claimed' }
  | { kind: 'replay'; answer: StoredAnswer }
  /** The key was used with a different request. */
  | { kind: 'mismatch' }
  /** The first request with the key has no answer yet: it is running, or the process died during it. */
  | { kind: 'in_progress' };

/** Where answers are kept by key: SQLite here, PostgreSQL in postgres/. */
export type IdempotencyStore = Promised<SqliteIdempotencyStore>;

export class SqliteIdempotencyStore {
  private lastSweep = -Infinity;

  constructor(private readonly db: Db) {}

  /** One statement decides: two requests with one key never both get `claimed`. */
  claim(orgId: string, key: string, fingerprint: string, now: number): IdempotencyClaim {
    if (now - this.lastSweep >= SWEEP_EVERY_MS) {
      this.lastSweep = now;
      this.db.prepare('DELETE FROM idempotency_keys WHERE created_at <= ?').run(now - IDEMPOTENCY_TTL_MS);
    }
    const inserted = this.db
      .prepare(
        'INSERT INTO idempotency_keys (org_id, key, fingerprint, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (org_id, key) DO NOTHING',
      )
      .run(orgId, key, fingerprint, now);
    if (inserted.changes === 1) return { kind: 'claimed' };
    const row = this.db
      .prepare(
        'SELECT fingerprint, status_code, response, created_at FROM idempotency_keys WHERE org_id = ? AND key = ?',
      )
      .get(orgId, key) as
      { fingerprint: string; status_code: number | null; response: string | null; created_at: number } | undefined;
    // Expired but not yet swept: the old answer no longer binds.
    if (!row || now - row.created_at >= IDEMPOTENCY_TTL_MS) {
      this.db.prepare('DELETE FROM idempotency_keys WHERE org_id = ? AND key = ?').run(orgId, key);
      return this.claim(orgId, key, fingerprint, now);
    }
    if (row.fingerprint !== fingerprint) return { kind: 'mismatch' };
    if (row.status_code === null || row.response === null) return { kind: 'in_progress' };
    return { kind: 'replay', answer: { status: row.status_code, body: row.response } };
  }

  finish(orgId: string, key: string, answer: StoredAnswer): void {
    this.db
      .prepare('UPDATE idempotency_keys SET status_code = ?, response = ? WHERE org_id = ? AND key = ?')
      .run(answer.status, answer.body, orgId, key);
  }

  /** The request failed without creating anything: the key may be tried again. */
  release(orgId: string, key: string): void {
    this.db
      .prepare('DELETE FROM idempotency_keys WHERE org_id = ? AND key = ? AND status_code IS NULL')
      .run(orgId, key);
  }
}
