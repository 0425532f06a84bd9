import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.ts';
import { IDEMPOTENCY_TTL_MS, SqliteIdempotencyStore } from '../../src/store/idempotency.ts';

const fresh = () => new SqliteIdempotencyStore(openDatabase(':memory:'));
const answer = { status: 201, body: '{"call_id":"call_1"}' };

describe('idempotency store', () => {
  it('the first claim holds the key; a second claim before the answer is in progress', () => {
    const store = fresh();
    expect(store.claim('acme', 'k', 'f', 0)).toEqual({ kind: 'claimed' });
    expect(store.claim('acme', 'k', 'f', 1)).toEqual({ kind: 'in_progress' });
  });

  it('a finished key replays its answer for 24 hours, then is a new request', () => {
    const store = fresh();
    store.claim('acme', 'k', 'f', 0);
    store.finish('acme', 'k', answer);
    expect(store.claim('acme', 'k', 'f', IDEMPOTENCY_TTL_MS - 1)).toEqual({ kind: 'replay', answer });
    expect(store.claim('acme', 'k', 'f', IDEMPOTENCY_TTL_MS)).toEqual({ kind: 'claimed' });
  });

  it('a different fingerprint under a used key is a mismatch, finished or not', () => {
    const store = fresh();
    store.claim('acme', 'k', 'f', 0);
    expect(store.claim('acme', 'k', 'g', 1)).toEqual({ kind: 'mismatch' });
    store.finish('acme', 'k', answer);
    expect(store.claim('acme', 'k', 'g', 2)).toEqual({ kind: 'mismatch' });
  });

  it('release frees only a key without an answer', () => {
    const store = fresh();
    store.claim('acme', 'k', 'f', 0);
    store.release('acme', 'k');
    expect(store.claim('acme', 'k', 'g', 1)).toEqual({ kind: 'claimed' });
    store.finish('acme', 'k', answer);
    store.release('acme', 'k');
    expect(store.claim('acme', 'k', 'g', 2)).toEqual({ kind: 'replay', answer });
  });

  it('organizations never share keys', () => {
    const store = fresh();
    store.claim('acme', 'k', 'f', 0);
    expect(store.claim('globex', 'k', 'f', 0)).toEqual({ kind: 'claimed' });
  });

  it('expired keys are swept from the table', () => {
    const db = openDatabase(':memory:');
    const store = new SqliteIdempotencyStore(db);
    for (let i = 0; i < 5; i++) store.claim('acme', `k${i}`, 'f', 0);
    store.claim('acme', 'late', 'f', IDEMPOTENCY_TTL_MS + 60_000);
    expect(db.prepare('SELECT key FROM idempotency_keys').all()).toEqual([{ key: 'late' }]);
  });
});
