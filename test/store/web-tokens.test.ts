// Web call tokens live in the store so that a browser's media socket may reach any node: each
// token opens its call once, whichever node redeems it, and only the issuing node's expiry ends it.
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.ts';
import { promised } from '../../src/store/promised.ts';
import { SqliteWebCallTokens } from '../../src/store/web-tokens.ts';
import { WEB_TOKEN_TTL_MS, WebCallTokens } from '../../src/transports/web/tokens.ts';
import { ManualTimers } from '../../src/timers.ts';

describe('web call tokens in the store', () => {
  it('a token issued on one node is redeemed once on another; the issuer then never ends the call', async () => {
    const db = openDatabase(':memory:');
    const timers = new ManualTimers(0);
    const expired: string[] = [];
    const issuer = new WebCallTokens(promised(new SqliteWebCallTokens(db)), timers, ({ callId }) =>
      expired.push(callId),
    );
    const peer = new WebCallTokens(promised(new SqliteWebCallTokens(db)), timers, ({ callId }) => expired.push(callId));
    await issuer.issue('wct_one', 'acme', 'call_1');
    expect(await peer.redeem('wct_one')).toEqual({ orgId: 'acme', callId: 'call_1' });
    expect(await issuer.redeem('wct_one')).toBeUndefined();
    timers.advance(WEB_TOKEN_TTL_MS);
    expect(expired).toEqual([]);
  });

  it('a token never redeemed ends its call once, at its expiry on the issuing node', async () => {
    const db = openDatabase(':memory:');
    const timers = new ManualTimers(0);
    const expired: string[] = [];
    const issuer = new WebCallTokens(promised(new SqliteWebCallTokens(db)), timers, ({ callId }) =>
      expired.push(callId),
    );
    await issuer.issue('wct_two', 'acme', 'call_2');
    timers.advance(WEB_TOKEN_TTL_MS);
    await new Promise((r) => setImmediate(r));
    expect(expired).toEqual(['call_2']);
    expect(
      await new WebCallTokens(promised(new SqliteWebCallTokens(db)), timers, () => undefined).redeem('wct_two'),
    ).toBeUndefined();
  });

  it('only the hash of a token is stored', async () => {
    const db = openDatabase(':memory:');
    await new WebCallTokens(promised(new SqliteWebCallTokens(db)), new ManualTimers(0), () => undefined).issue(
      'wct_secret',
      'acme',
      'call_3',
    );
    const rows = db.prepare('SELECT * FROM web_call_tokens').all();
    expect(JSON.stringify(rows)).not.toContain('wct_secret');
    expect(rows).toHaveLength(1);
  });
});
