// Web call access tokens on SQLite: DELETE … RETURNING takes a token out in one statement.
import type { Db } from './database.ts';

/** Far beyond a token's life (a minute): by then its issuer has ended the call, or recovery has. */
export const WEB_TOKEN_STALE_AFTER_MS = 60 * 60_000;

export class SqliteWebCallTokens {
  constructor(private readonly db: Db) {}

  issue(tokenHash: string, orgId: string, callId: string, expiresAt: number): void {
    // Tokens a dead node issued are never taken: dropped long after any live issuer's expiry timer ran.
    this.db.prepare('DELETE FROM web_call_tokens WHERE expires_at < ?').run(expiresAt - WEB_TOKEN_STALE_AFTER_MS);
    this.db
      .prepare('INSERT INTO web_call_tokens (token_hash, org_id, call_id, expires_at) VALUES (?, ?, ?, ?)')
      .run(tokenHash, orgId, callId, expiresAt);
  }

  take(tokenHash: string): { orgId: string; callId: string; expiresAt: number } | undefined {
    const row = this.db
      .prepare('DELETE FROM web_call_tokens WHERE token_hash = ? RETURNING org_id, call_id, expires_at')
      .get(tokenHash) as { org_id: string; call_id: string; expires_at: number } | undefined;
    return row ? { orgId: row.org_id, callId: row.call_id, expiresAt: row.expires_at } : undefined;
  }
}
