import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { registeredRecord } from '../../src/records/record.ts';
import { MIGRATIONS, migrate, openDatabase } from '../../src/store/database.ts';
import { SqliteCallRepository } from '../../src/store/calls.ts';
import { SqliteAgentRepository } from '../../src/store/agents.ts';
import { AgentConfigSchema } from '../../src/agents/schema.ts';
import { testSecretBox } from '../helpers/secrets.ts';

const file = () => join(mkdtempSync(join(tmpdir(), 'db-')), 'test.db');
const record = (call_id: string) =>
  registeredRecord({ call_id, agent_id: 'a', agent_version: 1, call_type: 'web', call_from: null, call_to: null });

describe('embedded store', () => {
  it('runs in WAL mode with every migration applied once', () => {
    const path = file();
    const db = openDatabase(path);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    const versions = db.prepare('SELECT version FROM schema_migrations ORDER BY version').all();
    expect(versions).toEqual(MIGRATIONS.map((m) => ({ version: m.version })));
    expect(migrate(db, MIGRATIONS)).toBe(0);
    db.close();
    const again = openDatabase(path);
    expect(again.prepare('SELECT count(*) AS n FROM schema_migrations').get()).toEqual({ n: MIGRATIONS.length });
    again.close();
  });

  it('applies a new migration on the next open', () => {
    const path = file();
    openDatabase(path).close();
    const db = openDatabase(path, [
      ...MIGRATIONS,
      { version: 99, name: 'probe', sql: 'CREATE TABLE probe (x INTEGER) STRICT' },
    ]);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'probe'").get()).toEqual({ name: 'probe' });
    db.close();
  });

  it('leaves a record untouched when an update fails half-way', () => {
    const db = openDatabase(file());
    const calls = new SqliteCallRepository(db);
    calls.insert('org', record('call_a'), 1000);
    expect(() =>
      calls.update('org', 'call_a', () => {
        throw new Error('crash in the middle of a change');
      }),
    ).toThrow(/crash/);
    expect(calls.get('org', 'call_a')).toEqual(record('call_a'));
    db.close();
  });

  it('reads a record written before llm_token_usage existed with it null', () => {
    const db = openDatabase(file());
    const calls = new SqliteCallRepository(db);
    calls.insert('org', record('call_old'), 1000);
    const { llm_token_usage: _added, ...older } = record('call_old');
    db.prepare('UPDATE calls SET record = ? WHERE call_id = ?').run(JSON.stringify(older), 'call_old');
    expect(calls.get('org', 'call_old')).toEqual(record('call_old'));
    expect(calls.get('org', 'call_old')?.llm_token_usage).toBeNull();
    db.close();
  });

  it('keeps a written record across a reopen, as after a crash', () => {
    const path = file();
    const db = openDatabase(path);
    new SqliteCallRepository(db).insert('org', record('call_b'), 1000);
    // No close: the next open must still see the committed row through the WAL.
    const other = openDatabase(path);
    expect(new SqliteCallRepository(other).get('org', 'call_b')?.call_id).toBe('call_b');
    other.close();
    db.close();
  });

  it('uses an index for every list filter', () => {
    const db = openDatabase(file());
    for (const column of [
      'agent_id',
      'call_type',
      'call_status',
      'disconnection_reason',
      'user_sentiment',
      'call_from',
      'call_to',
    ]) {
      const plan = db
        .prepare(
          `EXPLAIN QUERY PLAN SELECT call_id FROM calls WHERE org_id = ? AND ${column} IN (?, ?) ORDER BY sort_ts DESC, call_id DESC LIMIT 8`,
        )
        .all('o', 'x', 'y') as { detail: string }[];
      expect(plan.map((p) => p.detail).join(' '), column).toMatch(/USING (COVERING )?INDEX/);
    }
    for (const column of ['campaign_id', 'batch_id']) {
      const plan = db.prepare(`EXPLAIN QUERY PLAN SELECT call_id FROM calls WHERE ${column} = ?`).all('x') as {
        detail: string;
      }[];
      expect(plan.map((p) => p.detail).join(' '), column).toMatch(/USING (COVERING )?INDEX/);
    }
    db.close();
  });

  it('gives a number two organizations already listed to the one that listed it first, and routes its calls there', () => {
    const path = file();
    const before = openDatabase(
      path,
      MIGRATIONS.filter((m) => m.version < 11),
    );
    const config = (name: string) =>
      JSON.stringify(
        AgentConfigSchema.parse({
          agent_name: name,
          llm: { base_url: 'https://m.example.com/v1', model: 'm' },
          inbound_numbers: ['+15550600001'],
        }),
      );
    const insert = before.prepare(
      'INSERT INTO agent_versions (org_id, agent_id, version, is_published, created_at, config) VALUES (?, ?, 1, 1, ?, ?)',
    );
    insert.run('acme', 'first', 1000, config('First'));
    insert.run('globex', 'later', 2000, config('Later'));
    before.close();
    const db = openDatabase(path);
    const agents = new SqliteAgentRepository(db, testSecretBox());
    expect(agents.numberOwner('+15550600001')).toBe('acme');
    expect(agents.findByInboundNumber('+15550600001')).toMatchObject({ orgId: 'acme', agentId: 'first' });
    db.close();
  });
});
