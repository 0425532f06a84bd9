// The smaller repositories on PostgreSQL, each the SQLite one's statements in PostgreSQL's words:
// carrier call ids, credit balances, node leases, web call tokens, idempotency keys, request windows.
import type { CreditRepository } from '../../call/limits.ts';
import type { NodeLeases } from '../../records/nodes.ts';
import type { WebCallTokenRepository } from '../../records/web-tokens.ts';
import type { CarrierCallRepository } from '../../carriers/carrier-calls.ts';
import {
  IDEMPOTENCY_TTL_MS,
  SWEEP_EVERY_MS,
  type IdempotencyClaim,
  type IdempotencyStore,
  type StoredAnswer,
} from '../idempotency.ts';
import { RATE_HIT_SQL, type RateWindow, type RateWindowStore } from '../rate-windows.ts';
import { WEB_TOKEN_STALE_AFTER_MS } from '../web-tokens.ts';
import type { PgDb } from './db.ts';

export class PgCarrierCallRepository implements CarrierCallRepository {
  constructor(private readonly db: PgDb) {}

  async record(
    callId: string,
    carrier: string,
    carrierCallId: string,
    at: number,
    carrierAccountId?: string,
  ): Promise<void> {
    await this.db.run(
      'INSERT INTO carrier_calls (call_id, carrier, carrier_call_id, created_at, carrier_account_id) VALUES (?, ?, ?, ?, ?) ON CONFLICT (call_id) DO UPDATE SET carrier_call_id = excluded.carrier_call_id, carrier_account_id = excluded.carrier_account_id',
      [callId, carrier, carrierCallId, at, carrierAccountId ?? null],
    );
  }

  async carrierAccountOf(callId: string): Promise<string | undefined> {
    return (
      (
        await this.db.row<{ carrier_account_id: string | null }>(
          'SELECT carrier_account_id FROM carrier_calls WHERE call_id = ?',
          [callId],
        )
      )?.carrier_account_id ?? undefined
    );
  }

  async carrierCallId(callId: string): Promise<string | undefined> {
    return (
      await this.db.row<{ carrier_call_id: string }>('SELECT carrier_call_id FROM carrier_calls WHERE call_id = ?', [
        callId,
      ])
    )?.carrier_call_id;
  }

  async callIdOf(carrier: string, carrierCallId: string): Promise<string | undefined> {
    return (
      await this.db.row<{ call_id: string }>(
        'SELECT call_id FROM carrier_calls WHERE carrier = ? AND carrier_call_id = ?',
        [carrier, carrierCallId],
      )
    )?.call_id;
  }
}

export class PgCreditRepository implements CreditRepository {
  constructor(private readonly db: PgDb) {}

  async initialize(orgId: string, balance: number, at: number): Promise<void> {
    await this.db.run(
      'INSERT INTO org_credits (org_id, balance, updated_at) VALUES (?, ?, ?) ON CONFLICT (org_id) DO NOTHING',
      [orgId, balance, at],
    );
  }

  async balance(orgId: string): Promise<number | undefined> {
    return (await this.db.row<{ balance: number }>('SELECT balance FROM org_credits WHERE org_id = ?', [orgId]))
      ?.balance;
  }

  async debit(orgId: string, credits: number, at: number): Promise<void> {
    await this.db.run('UPDATE org_credits SET balance = balance - ?, updated_at = ? WHERE org_id = ?', [
      credits,
      at,
      orgId,
    ]);
  }
}

export class PgNodeLeases implements NodeLeases {
  constructor(private readonly db: PgDb) {}

  async acquire(nodeId: string, epoch: string, now: number, until: number, url: string | null): Promise<void> {
    await this.db.run(
      'INSERT INTO service_nodes (node_id, epoch, lease_until, renewed_at, url) VALUES (?, ?, ?, ?, ?) ON CONFLICT (node_id) DO UPDATE SET epoch = excluded.epoch, lease_until = excluded.lease_until, renewed_at = excluded.renewed_at, url = excluded.url',
      [nodeId, epoch, until, now, url],
    );
  }

  /** An update, never an insert: a lease taken over stays gone (the row lock orders it with forgetExpired's delete). */
  async renew(nodeId: string, epoch: string, now: number, until: number, url: string | null): Promise<boolean> {
    return (
      (await this.db.run(
        'UPDATE service_nodes SET lease_until = ?, renewed_at = ?, url = ? WHERE node_id = ? AND epoch = ?',
        [until, now, url, nodeId, epoch],
      )) === 1
    );
  }

  async release(nodeId: string, epoch: string): Promise<void> {
    await this.db.run('DELETE FROM service_nodes WHERE node_id = ? AND epoch = ?', [nodeId, epoch]);
  }

  async alive(now: number): Promise<string[]> {
    return (
      await this.db.rows<{ node_id: string }>('SELECT node_id FROM service_nodes WHERE lease_until >= ?', [now])
    ).map((r) => r.node_id);
  }

  async urlOf(nodeId: string, now: number): Promise<string | null> {
    return (
      (
        await this.db.row<{ url: string | null }>(
          'SELECT url FROM service_nodes WHERE node_id = ? AND lease_until >= ?',
          [nodeId, now],
        )
      )?.url ?? null
    );
  }

  forgetExpired(now: number): Promise<number> {
    return this.db.run('DELETE FROM service_nodes WHERE lease_until < ?', [now]);
  }
}

export class PgWebCallTokens implements WebCallTokenRepository {
  constructor(private readonly db: PgDb) {}

  async issue(tokenHash: string, orgId: string, callId: string, expiresAt: number): Promise<void> {
    await this.db.run('DELETE FROM web_call_tokens WHERE expires_at < ?', [expiresAt - WEB_TOKEN_STALE_AFTER_MS]);
    await this.db.run('INSERT INTO web_call_tokens (token_hash, org_id, call_id, expires_at) VALUES (?, ?, ?, ?)', [
      tokenHash,
      orgId,
      callId,
      expiresAt,
    ]);
  }

  async take(tokenHash: string): Promise<{ orgId: string; callId: string; expiresAt: number } | undefined> {
    const row = await this.db.row<{ org_id: string; call_id: string; expires_at: number }>(
      'DELETE FROM web_call_tokens WHERE token_hash = ? RETURNING org_id, call_id, expires_at',
      [tokenHash],
    );
    return row ? { orgId: row.org_id, callId: row.call_id, expiresAt: row.expires_at } : undefined;
  }
}

export class PgIdempotencyStore implements IdempotencyStore {
  private lastSweep = -Infinity;

  constructor(private readonly db: PgDb) {}

  /** One statement decides: two requests with one key never both get `claimed`. */
  async claim(orgId: string, key: string, fingerprint: string, now: number): Promise<IdempotencyClaim> {
    if (now - this.lastSweep >= SWEEP_EVERY_MS) {
      this.lastSweep = now;
      await this.db.run('DELETE FROM idempotency_keys WHERE created_at <= ?', [now - IDEMPOTENCY_TTL_MS]);
    }
    const inserted = await this.db.run(
      'INSERT INTO idempotency_keys (org_id, key, fingerprint, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (org_id, key) DO NOTHING',
      [orgId, key, fingerprint, now],
    );
    if (inserted === 1) return { kind: 'claimed' };
    const row = await this.db.row<{
      fingerprint: string;
      status_code: number | null;
      response: string | null;
      created_at: number;
    }>('SELECT fingerprint, status_code, response, created_at FROM idempotency_keys WHERE org_id = ? AND key = ?', [
      orgId,
      key,
    ]);
    // Expired but not yet swept: the old answer no longer binds.
    if (!row || now - row.created_at >= IDEMPOTENCY_TTL_MS) {
      await this.db.run('DELETE FROM idempotency_keys WHERE org_id = ? AND key = ? AND created_at <= ?', [
        orgId,
        key,
        now - IDEMPOTENCY_TTL_MS,
      ]);
      return this.claim(orgId, key, fingerprint, now);
    }
    if (row.fingerprint !== fingerprint) return { kind: 'mismatch' };
    if (row.status_code === null || row.response === null) return { kind: 'in_progress' };
    return { kind: 'replay', answer: { status: row.status_code, body: row.response } };
  }

  async finish(orgId: string, key: string, answer: StoredAnswer): Promise<void> {
    await this.db.run('UPDATE idempotency_keys SET status_code = ?, response = ? WHERE org_id = ? AND key = ?', [
      answer.status,
      answer.body,
      orgId,
      key,
    ]);
  }

  async release(orgId: string, key: string): Promise<void> {
    await this.db.run('DELETE FROM idempotency_keys WHERE org_id = ? AND key = ? AND status_code IS NULL', [
      orgId,
      key,
    ]);
  }
}

export class PgRateWindowStore implements RateWindowStore {
  constructor(private readonly db: PgDb) {}

  async hit(key: string, now: number): Promise<RateWindow> {
    const row = await this.db.row<{ window_start: string | number; count: number }>(RATE_HIT_SQL, [key, now]);
    if (!row) throw new Error('counting a request returned no window');
    return { start: Number(row.window_start), count: Number(row.count) };
  }
}
