// The store room, built from config: one SQLite database under DATA_DIR (WAL mode) and the
// repositories the other rooms declare, implemented on it.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteAgentTestRepository } from './agent-tests.ts';
import { SqliteAgentRepository } from './agents.ts';
import { SqliteCallRepository } from './calls.ts';
import { SqliteCampaignRepository } from './campaigns.ts';
import { SqliteCarrierCallRepository } from './carrier-calls.ts';
import { SqliteCreditRepository } from './credits.ts';
import { openDatabase, type Db } from './database.ts';
import { SqliteIdempotencyStore } from './idempotency.ts';
import { SqliteNodeLeases } from './nodes.ts';
import { SqliteWebCallTokens } from './web-tokens.ts';
import { SqliteWebhookRepository } from './webhooks.ts';
import type { RandomHex } from '../clock.ts';

export interface Store {
  db: Db;
  agents: SqliteAgentRepository;
  agentTests: SqliteAgentTestRepository;
  calls: SqliteCallRepository;
  campaigns: SqliteCampaignRepository;
  carrierCalls: SqliteCarrierCallRepository;
  credits: SqliteCreditRepository;
  idempotency: SqliteIdempotencyStore;
  nodes: SqliteNodeLeases;
  webCallTokens: SqliteWebCallTokens;
  webhooks: SqliteWebhookRepository;
  /** For readiness: null when the database answers, else why not. */
  problem(): string | null;
  close(): void;
}

/**
 * DATA_DIR holds keys, conversations and recordings: only the service's user may enter it, and the
 * database is created private (SQLite gives its -wal and -shm files the database's mode).
 */
function privateDatabaseFile(dataDir: string): string {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // A directory the operator made for another owner keeps its mode: the service cannot change it.
  try {
    chmodSync(dataDir, 0o700);
  } catch {}
  const file = join(dataDir, 'voicecall.db');
  if (existsSync(file)) chmodSync(file, 0o600);
  else closeSync(openSync(file, 'a', 0o600));
  return file;
}

export function openStore(dataDir: string, options: { random: RandomHex; now: () => number; webhooksQueued?: () => void }): Store {
  const db = openDatabase(privateDatabaseFile(dataDir));
  const webhooks = new SqliteWebhookRepository(db, options.random, options.now, options.webhooksQueued);
  const campaigns: SqliteCampaignRepository = new SqliteCampaignRepository(db, (campaign) => webhooks.enqueueCampaignEnded(campaign, campaigns.callIds(campaign.id)));
  return {
    db,
    agents: new SqliteAgentRepository(db),
    agentTests: new SqliteAgentTestRepository(db),
    calls: new SqliteCallRepository(db, (orgId, before, after) => webhooks.enqueueCallEvents(orgId, before, after)),
    webhooks,
    campaigns,
    carrierCalls: new SqliteCarrierCallRepository(db),
    credits: new SqliteCreditRepository(db),
    idempotency: new SqliteIdempotencyStore(db),
    nodes: new SqliteNodeLeases(db),
    webCallTokens: new SqliteWebCallTokens(db),
    problem() {
      try {
        db.prepare('SELECT 1').get();
        return null;
      } catch (error) {
        return `store unavailable: ${(error as Error).message}`;
      }
    },
    close: () => db.close(),
  };
}
