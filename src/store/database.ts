// The embedded store: one SQLite file in WAL mode, schema changed only by numbered migrations.
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

export type Db = Database.Database;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

// Append only: a shipped migration never changes, the next one fixes it.
export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'calls and agents',
    sql: `
      CREATE TABLE calls (
        call_id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        -- start_timestamp once the call connected, creation time before (docs/contract.md, paging)
        sort_ts INTEGER NOT NULL,
        agent_id TEXT NOT NULL,
        call_type TEXT NOT NULL,
        call_status TEXT NOT NULL,
        call_from TEXT,
        call_to TEXT,
        disconnection_reason TEXT,
        user_sentiment TEXT,
        start_timestamp INTEGER,
        duration_ms INTEGER,
        campaign_id TEXT,
        batch_id TEXT,
        record TEXT NOT NULL
      ) STRICT;
      CREATE INDEX calls_org_sort ON calls (org_id, sort_ts, call_id);
      CREATE INDEX calls_agent ON calls (org_id, agent_id, sort_ts, call_id);
      CREATE INDEX calls_type ON calls (org_id, call_type, sort_ts, call_id);
      CREATE INDEX calls_status ON calls (org_id, call_status, sort_ts, call_id);
      CREATE INDEX calls_reason ON calls (org_id, disconnection_reason, sort_ts, call_id);
      CREATE INDEX calls_sentiment ON calls (org_id, user_sentiment, sort_ts, call_id);
      CREATE INDEX calls_from ON calls (org_id, call_from, sort_ts, call_id);
      CREATE INDEX calls_to ON calls (org_id, call_to, sort_ts, call_id);
      CREATE INDEX calls_start ON calls (org_id, start_timestamp);
      CREATE INDEX calls_duration ON calls (org_id, duration_ms);
      CREATE INDEX calls_campaign ON calls (campaign_id, sort_ts, call_id) WHERE campaign_id IS NOT NULL;
      CREATE INDEX calls_batch ON calls (batch_id, sort_ts, call_id) WHERE batch_id IS NOT NULL;

      CREATE TABLE agent_versions (
        org_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        is_published INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        config TEXT NOT NULL,
        PRIMARY KEY (org_id, agent_id, version)
      ) STRICT;
      CREATE INDEX agent_versions_by_id ON agent_versions (agent_id);
    `,
  },
  {
    version: 2,
    name: 'per-call media stream secret',
    // Only a hash is kept: the secret itself travels once, in the carrier's stream parameters.
    sql: `ALTER TABLE calls ADD COLUMN stream_secret_hash TEXT;`,
  },
  {
    version: 3,
    name: 'organization credit balances',
    sql: `CREATE TABLE org_credits (org_id TEXT PRIMARY KEY, balance REAL NOT NULL, updated_at INTEGER NOT NULL) STRICT;`,
  },
  {
    version: 10,
    name: 'campaigns, batches and their tasks',
    // Batches share the campaigns table (kind = 'batch'): they run through the same scheduler.
    // A task is the unit the scheduler claims: state pending → active (claimed, call_id fixed in
    // the same transaction) → completed | failed, or canceled before it was dialed.
    sql: `
      CREATE TABLE campaigns (
        id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('campaign', 'batch')),
        name TEXT NOT NULL,
        status TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        agent_version INTEGER NOT NULL,
        from_number TEXT NOT NULL,
        presentation_number TEXT,
        concurrency INTEGER NOT NULL,
        total_calls INTEGER NOT NULL,
        completed_calls INTEGER NOT NULL DEFAULT 0,
        failed_calls INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        scheduled_at INTEGER,
        -- scheduled_at when given, else created_at: what the start_timestamp filter matches
        start_ts INTEGER NOT NULL,
        finished_at INTEGER
      ) STRICT;
      CREATE INDEX campaigns_org_created ON campaigns (org_id, kind, created_at, id);
      CREATE INDEX campaigns_runnable ON campaigns (status) WHERE status IN ('draft', 'pending', 'ongoing');

      CREATE TABLE campaign_tasks (
        campaign_id TEXT NOT NULL REFERENCES campaigns (id),
        seq INTEGER NOT NULL,
        call_to TEXT NOT NULL,
        presentation_number TEXT,
        metadata TEXT NOT NULL,
        dynamic_variables TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'active', 'completed', 'failed', 'canceled')),
        call_id TEXT UNIQUE,
        claimed_by TEXT,
        reason TEXT,
        PRIMARY KEY (campaign_id, seq)
      ) STRICT;
      CREATE INDEX campaign_tasks_state ON campaign_tasks (campaign_id, state, seq);
      CREATE INDEX campaign_tasks_active ON campaign_tasks (claimed_by) WHERE state = 'active';

      -- Live schedulers: a claimed task whose owner stopped heartbeating is recovered by any peer.
      CREATE TABLE scheduler_leases (
        instance_id TEXT PRIMARY KEY,
        heartbeat_at INTEGER NOT NULL
      ) STRICT;

      -- The carrier's id of each outbound call, so the call can be hung up by call_id.
      CREATE TABLE carrier_calls (
        call_id TEXT PRIMARY KEY,
        carrier TEXT NOT NULL,
        carrier_call_id TEXT NOT NULL,
        created_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX carrier_calls_by_carrier_id ON carrier_calls (carrier, carrier_call_id);
    `,
  },
  {
    version: 11,
    name: 'inbound numbers belong to one organization',
    // Where organizations already share a number, the first to have listed it keeps it.
    sql: `
      CREATE TABLE number_owners (
        number TEXT PRIMARY KEY,
        org_id TEXT NOT NULL,
        claimed_at INTEGER NOT NULL
      ) STRICT;
      INSERT OR IGNORE INTO number_owners (number, org_id, claimed_at)
        SELECT j.value, a.org_id, a.created_at FROM agent_versions a, json_each(a.config, '$.inbound_numbers') j
        ORDER BY a.created_at, a.org_id;
    `,
  },
  {
    version: 12,
    name: 'idempotency keys',
    // status_code NULL: the first request with the key is still being handled (or died doing so).
    sql: `
      CREATE TABLE idempotency_keys (
        org_id TEXT NOT NULL,
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        status_code INTEGER,
        response TEXT,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (org_id, key)
      ) STRICT;
      CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
    `,
  },
  {
    version: 13,
    name: 'webhook settings and the delivery outbox',
    // seq orders a call's deliveries; claimed_until leases a delivery to one sender at a time.
    sql: `
      CREATE TABLE webhook_settings (
        org_id TEXT PRIMARY KEY,
        webhook_url TEXT,
        events TEXT NOT NULL,
        secret TEXT NOT NULL,
        previous_secret TEXT,
        previous_until INTEGER,
        updated_at INTEGER NOT NULL
      ) STRICT;
      CREATE TABLE webhook_deliveries (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        org_id TEXT NOT NULL,
        event TEXT NOT NULL,
        call_id TEXT,
        url TEXT NOT NULL,
        body TEXT NOT NULL,
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER,
        claimed_until INTEGER NOT NULL DEFAULT 0,
        last_status INTEGER,
        last_error TEXT,
        created_at INTEGER NOT NULL,
        delivered_at INTEGER
      ) STRICT;
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_by_call ON webhook_deliveries (call_id, seq) WHERE call_id IS NOT NULL;
      CREATE INDEX webhook_deliveries_by_org ON webhook_deliveries (org_id, created_at, id);
    `,
  },
  {
    version: 14,
    name: 'agent tests and their runs',
    // A test and a run are JSON documents (their shapes are the API's); the columns are what they are looked up by.
    sql: `
      CREATE TABLE agent_tests (
        test_id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        test TEXT NOT NULL
      ) STRICT;
      CREATE INDEX agent_tests_by_agent ON agent_tests (org_id, agent_id, created_at, test_id);
      CREATE TABLE agent_test_runs (
        run_id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        agent_version INTEGER NOT NULL,
        status TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        run TEXT NOT NULL
      ) STRICT;
      CREATE INDEX agent_test_runs_by_agent ON agent_test_runs (org_id, agent_id, created_at, run_id);
      CREATE INDEX agent_test_runs_running ON agent_test_runs (status) WHERE status = 'running';
    `,
  },
  {
    version: 15,
    name: 'service nodes and the calls they own',
    // A call whose owner_node has no live lease is finished by whichever node notices (recovery).
    sql: `
      CREATE TABLE service_nodes (node_id TEXT PRIMARY KEY, lease_until INTEGER NOT NULL, renewed_at INTEGER NOT NULL) STRICT;
      ALTER TABLE calls ADD COLUMN owner_node TEXT;
      -- Every heartbeat looks for orphans among the calls not yet final: found by status, not by a scan of every call kept.
      CREATE INDEX calls_by_status_owner ON calls (call_status, owner_node);
    `,
  },
  {
    version: 16,
    name: 'organization slots held in the store',
    // A call not yet final with holds_slot 1 counts against its organization's concurrent-call limit,
    // whichever process runs it: the limit holds across processes sharing the store.
    sql: `ALTER TABLE calls ADD COLUMN holds_slot INTEGER NOT NULL DEFAULT 0;`,
  },
  {
    version: 17,
    name: 'node addresses and web call tokens in the store',
    // A live-control request or a carrier callback for a call may reach any node: it is passed on to
    // the node's url. A browser's media socket may reach any node too: its token is redeemed here.
    sql: `
      ALTER TABLE service_nodes ADD COLUMN url TEXT;
      CREATE TABLE web_call_tokens (
        token_hash TEXT PRIMARY KEY,
        org_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 18,
    name: 'agent test runs belong to the node running them',
    // A node that starts ends only the runs of dead nodes (its own previous run's among them), not a live peer's.
    sql: `ALTER TABLE agent_test_runs ADD COLUMN owner_node TEXT;`,
  },
  {
    version: 19,
    name: 'request windows in the store',
    // RATE_LIMIT_PER_MINUTE counted once for every process sharing the store, not once per process.
    sql: `CREATE TABLE rate_windows (key TEXT PRIMARY KEY, window_start INTEGER NOT NULL, count INTEGER NOT NULL) STRICT;`,
  },
  {
    version: 20,
    name: 'fencing tokens on node leases and call ownership',
    // A lease is held under an epoch, new each time a node takes it; a call records the epoch of its
    // owner's lease. A peer takes a call over only once that epoch's lease row is gone (taken over or
    // given up): a stalled owner whose lease a peer took cannot renew it, and so learns it.
    sql: `
      ALTER TABLE service_nodes ADD COLUMN epoch TEXT;
      ALTER TABLE calls ADD COLUMN owner_epoch TEXT;
    `,
  },
  {
    version: 21,
    name: 'provider credentials',
    // The credential is a JSON document (the API's shape, its api_key sealed); a name is the organization's once.
    sql: `
      CREATE TABLE provider_credentials (
        credential_id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL,
        name TEXT NOT NULL,
        provider TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        credential TEXT NOT NULL,
        UNIQUE (org_id, name)
      ) STRICT;
      CREATE INDEX provider_credentials_by_org ON provider_credentials (org_id, created_at, credential_id);
    `,
  },
  {
    version: 22,
    name: 'carrier accounts',
    // The account is a JSON document (the API's shape, its credentials sealed). Its numbers are claimed in
    // number_owners like agents' and listed here too, one account each; a call records the account it went through.
    sql: `
      CREATE TABLE carrier_accounts (
        carrier_account_id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL,
        carrier TEXT NOT NULL,
        name TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        account TEXT NOT NULL
      ) STRICT;
      CREATE INDEX carrier_accounts_by_org ON carrier_accounts (org_id, created_at, carrier_account_id);
      CREATE TABLE carrier_account_numbers (
        number TEXT PRIMARY KEY,
        org_id TEXT NOT NULL,
        carrier_account_id TEXT NOT NULL
      ) STRICT;
      CREATE INDEX carrier_account_numbers_by_account ON carrier_account_numbers (carrier_account_id);
      ALTER TABLE carrier_calls ADD COLUMN carrier_account_id TEXT;
      CREATE INDEX carrier_calls_by_account ON carrier_calls (carrier_account_id);
    `,
  },
];

export function openDatabase(file: string, migrations: Migration[] = MIGRATIONS): Db {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  // NORMAL is durable across process crashes in WAL mode; only power loss can drop the last commits.
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db, migrations);
  return db;
}

export function migrate(db: Db, migrations: Migration[]): number {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
  );
  const applied = new Set(
    db
      .prepare('SELECT version FROM schema_migrations')
      .all()
      .map((row) => (row as { version: number }).version),
  );
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  let count = 0;
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (applied.has(m.version)) continue;
    // IMMEDIATE: two processes starting together must not both apply the same migration.
    db.transaction(() => {
      const again = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(m.version);
      if (again) return;
      db.exec(m.sql);
      record.run(m.version, m.name, Date.now());
      count++;
    }).immediate();
  }
  return count;
}
