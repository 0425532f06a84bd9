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
import { SqliteRateWindowStore, type RateWindowStore } from './rate-windows.ts';
import { SqliteWebCallTokens } from './web-tokens.ts';
import { SqliteWebhookRepository } from './webhooks.ts';
import type { RandomHex } from '../clock.ts';
import type { AgentRepository } from '../agents/repository.ts';
import type { AgentTestRepository } from '../agent-tests/repository.ts';
import type { CreditRepository } from '../call/limits.ts';
import type { NodeLeases } from '../calls/nodes.ts';
import type { CallRepository } from '../calls/repository.ts';
import type { WebCallTokenRepository } from '../calls/web-tokens.ts';
import type { CampaignRepository } from '../campaigns/repository.ts';
import type { CarrierCallRepository } from '../carriers/carrier-calls.ts';
import type { WebhookRepository } from '../webhooks/repository.ts';
import type { IdempotencyStore } from './idempotency.ts';
import { promised } from './promised.ts';

/** The repositories every room reads and writes through, on SQLite or PostgreSQL. */
export interface Store {
  /** The embedded database, when the store is SQLite (tests read it directly). */
  sqlite: Db | undefined;
  agents: AgentRepository;
  agentTests: AgentTestRepository;
  calls: CallRepository;
  campaigns: CampaignRepository;
  carrierCalls: CarrierCallRepository;
  credits: CreditRepository;
  idempotency: IdempotencyStore;
  nodes: NodeLeases;
  rateWindows: RateWindowStore;
  webCallTokens: WebCallTokenRepository;
  webhooks: WebhookRepository;
  /** For readiness: null when the database answers, else why not. */
  problem(): Promise<string | null>;
  close(): Promise<void>;
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
    sqlite: db,
    agents: promised(new SqliteAgentRepository(db)),
    agentTests: promised(new SqliteAgentTestRepository(db)),
    calls: promised(new SqliteCallRepository(db, (orgId, before, after) => webhooks.enqueueCallEvents(orgId, before, after))),
    webhooks: promised(webhooks),
    campaigns: promised(campaigns),
    carrierCalls: promised(new SqliteCarrierCallRepository(db)),
    credits: promised(new SqliteCreditRepository(db)),
    idempotency: promised(new SqliteIdempotencyStore(db)),
    nodes: promised(new SqliteNodeLeases(db)),
    rateWindows: promised(new SqliteRateWindowStore(db)),
    webCallTokens: promised(new SqliteWebCallTokens(db)),
    async problem() {
      try {
        db.prepare('SELECT 1').get();
        return null;
      } catch (error) {
        return `store unavailable: ${(error as Error).message}`;
      }
    },
    close: async () => {
      db.close();
    },
  };
}
