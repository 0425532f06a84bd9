// The PostgreSQL store's schema, changed only by numbered migrations as the SQLite one is. Version 1
// is the SQLite schema as of its migration 18, in PostgreSQL's types: times in epoch milliseconds
// (BIGINT), JSON documents as text exactly as the API shapes them (a record reads back byte for
// byte), balances in DOUBLE PRECISION.
import type { Migration } from '../database.ts';

// Append only: a shipped migration never changes, the next one fixes it.
export const PG_MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'the store as of SQLite migration 18',
    sql: `
      CREATE TABLE calls (
        call_id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        sort_ts BIGINT NOT NULL,
        agent_id TEXT NOT NULL,
        call_type TEXT NOT NULL,
        call_status TEXT NOT NULL,
        call_from TEXT,
        call_to TEXT,
        disconnection_reason TEXT,
        user_sentiment TEXT,
        start_timestamp BIGINT,
        duration_ms BIGINT,
        campaign_id TEXT,
        batch_id TEXT,
        record TEXT NOT NULL,
        stream_secret_hash TEXT,
        owner_node TEXT,
        holds_slot BOOLEAN NOT NULL DEFAULT FALSE
      );
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
      CREATE INDEX calls_by_status_owner ON calls (call_status, owner_node);

      CREATE TABLE agent_versions (
        org_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        is_published BOOLEAN NOT NULL DEFAULT FALSE,
        created_at BIGINT NOT NULL,
        config TEXT NOT NULL,
        PRIMARY KEY (org_id, agent_id, version)
      );
      CREATE INDEX agent_versions_by_id ON agent_versions (agent_id);

      CREATE TABLE number_owners (number TEXT PRIMARY KEY, org_id TEXT NOT NULL, claimed_at BIGINT NOT NULL);

      CREATE TABLE org_credits (org_id TEXT PRIMARY KEY, balance DOUBLE PRECISION NOT NULL, updated_at BIGINT NOT NULL);

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
        created_at BIGINT NOT NULL,
        scheduled_at BIGINT,
        start_ts BIGINT NOT NULL,
        finished_at BIGINT
      );
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
      );
      CREATE INDEX campaign_tasks_state ON campaign_tasks (campaign_id, state, seq);
      CREATE INDEX campaign_tasks_active ON campaign_tasks (claimed_by) WHERE state = 'active';
      CREATE TABLE scheduler_leases (instance_id TEXT PRIMARY KEY, heartbeat_at BIGINT NOT NULL);

      CREATE TABLE carrier_calls (call_id TEXT PRIMARY KEY, carrier TEXT NOT NULL, carrier_call_id TEXT NOT NULL, created_at BIGINT NOT NULL);
      CREATE INDEX carrier_calls_by_carrier_id ON carrier_calls (carrier, carrier_call_id);

      CREATE TABLE idempotency_keys (
        org_id TEXT NOT NULL,
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        status_code INTEGER,
        response TEXT,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (org_id, key)
      );
      CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);

      CREATE TABLE webhook_settings (
        org_id TEXT PRIMARY KEY,
        webhook_url TEXT,
        events TEXT NOT NULL,
        secret TEXT NOT NULL,
        previous_secret TEXT,
        previous_until BIGINT,
        updated_at BIGINT NOT NULL
      );
      CREATE TABLE webhook_deliveries (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        org_id TEXT NOT NULL,
        event TEXT NOT NULL,
        call_id TEXT,
        url TEXT NOT NULL,
        body TEXT NOT NULL,
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at BIGINT,
        claimed_until BIGINT NOT NULL DEFAULT 0,
        last_status INTEGER,
        last_error TEXT,
        created_at BIGINT NOT NULL,
        delivered_at BIGINT
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_by_call ON webhook_deliveries (call_id, seq) WHERE call_id IS NOT NULL;
      CREATE INDEX webhook_deliveries_by_org ON webhook_deliveries (org_id, created_at, id);

      -- seq orders rows written in the same millisecond, as SQLite's rowid does.
      CREATE TABLE agent_tests (
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        test_id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        test TEXT NOT NULL
      );
      CREATE INDEX agent_tests_by_agent ON agent_tests (org_id, agent_id, created_at, seq);
      CREATE TABLE agent_test_runs (
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        run_id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        agent_version INTEGER NOT NULL,
        status TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        run TEXT NOT NULL,
        owner_node TEXT
      );
      CREATE INDEX agent_test_runs_by_agent ON agent_test_runs (org_id, agent_id, created_at, seq);
      CREATE INDEX agent_test_runs_running ON agent_test_runs (status) WHERE status = 'running';

      CREATE TABLE service_nodes (node_id TEXT PRIMARY KEY, lease_until BIGINT NOT NULL, renewed_at BIGINT NOT NULL, url TEXT);
      CREATE TABLE web_call_tokens (token_hash TEXT PRIMARY KEY, org_id TEXT NOT NULL, call_id TEXT NOT NULL, expires_at BIGINT NOT NULL);
    `,
  },
  {
    version: 2,
    name: 'request windows in the store (SQLite migration 19)',
    sql: `CREATE TABLE rate_windows (key TEXT PRIMARY KEY, window_start BIGINT NOT NULL, count INTEGER NOT NULL);`,
  },
  {
    version: 3,
    name: 'fencing tokens on node leases and call ownership (SQLite migration 20)',
    sql: `
      ALTER TABLE service_nodes ADD COLUMN epoch TEXT;
      ALTER TABLE calls ADD COLUMN owner_epoch TEXT;
    `,
  },
  {
    version: 4,
    name: 'provider credentials (SQLite migration 21)',
    sql: `
      CREATE TABLE provider_credentials (
        credential_id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL,
        name TEXT NOT NULL,
        provider TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        credential TEXT NOT NULL,
        UNIQUE (org_id, name)
      );
      CREATE INDEX provider_credentials_by_org ON provider_credentials (org_id, created_at, credential_id);
    `,
  },
  {
    version: 5,
    name: 'carrier accounts (SQLite migration 22)',
    sql: `
      CREATE TABLE carrier_accounts (
        carrier_account_id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL,
        carrier TEXT NOT NULL,
        name TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        account TEXT NOT NULL
      );
      CREATE INDEX carrier_accounts_by_org ON carrier_accounts (org_id, created_at, carrier_account_id);
      CREATE TABLE carrier_account_numbers (
        number TEXT PRIMARY KEY,
        org_id TEXT NOT NULL,
        carrier_account_id TEXT NOT NULL
      );
      CREATE INDEX carrier_account_numbers_by_account ON carrier_account_numbers (carrier_account_id);
      ALTER TABLE carrier_calls ADD COLUMN carrier_account_id TEXT;
      CREATE INDEX carrier_calls_by_account ON carrier_calls (carrier_account_id);
    `,
  },
];
