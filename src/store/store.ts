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
import { SqliteProviderCredentialRepository } from './provider-credentials.ts';
import { SqliteCarrierAccountRepository } from './carrier-accounts.ts';
import { SqliteRateWindowStore, type RateWindowStore } from './rate-windows.ts';
import { SqliteWebCallTokens } from './web-tokens.ts';
import { SqliteWebhookRepository } from './webhooks.ts';
import type { RandomHex } from '../clock.ts';
import type { AgentRepository } from '../agents/repository.ts';
import type { AgentTestRepository } from '../agent-tests/repository.ts';
import type { CreditRepository } from '../call/limits.ts';
import type { NodeLeases } from '../records/nodes.ts';
import type { CallRepository } from '../records/repository.ts';
import type { WebCallTokenRepository } from '../records/web-tokens.ts';
import type { CampaignRepository } from '../campaigns/repository.ts';
import type { CarrierCallRepository } from '../carriers/carrier-calls.ts';
import type { ProviderCredentialRepository } from '../credentials/repository.ts';
import type { CarrierAccountRepository } from '../carrier-accounts/repository.ts';
import type { WebhookRepository } from '../webhooks/repository.ts';
import type { IdempotencyStore } from './idempotency.ts';
import { promised } from './promised.ts';
import { loadOrCreateSecretsKey, SecretBox } from '../secrets/sealed.ts';
import { resealed, SECRET_DOCUMENTS } from './secrets.ts';

/** See Store.sealStoredSecrets; rewritten rows leave no plaintext behind in the file (secure_delete). */
function sealSqliteSecrets(db: Db, box: SecretBox): number {
  let rewritten = 0;
  const secureDelete = db.pragma('secure_delete', { simple: true }) as number;
  db.pragma('secure_delete = ON');
  try {
    for (const { table, column, fields } of SECRET_DOCUMENTS) {
      const rows = db.prepare(`SELECT rowid AS id, ${column} AS text FROM ${table}`).all() as {
        id: number;
        text: string;
      }[];
      const update = db.prepare(`UPDATE ${table} SET ${column} = ? WHERE rowid = ? AND ${column} = ?`);
      for (const row of rows) {
        const next = resealed(row.text, fields, box);
        if (next !== null) rewritten += update.run(next, row.id, row.text).changes;
      }
    }
  } finally {
    db.pragma(`secure_delete = ${secureDelete}`);
  }
  return rewritten;
}

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
  providerCredentials: ProviderCredentialRepository;
  carrierAccounts: CarrierAccountRepository;
  rateWindows: RateWindowStore;
  webCallTokens: WebCallTokenRepository;
  webhooks: WebhookRepository;
  /**
   * Seals the secrets stored before sealing and opens every sealed one: the number of records
   * rewritten, or SecretKeyError when this node's key is not the one they were sealed with.
   */
  sealStoredSecrets(): Promise<number>;
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
  } catch {
    // not ours to change
  }
  const file = join(dataDir, 'voicecall.db');
  if (existsSync(file)) chmodSync(file, 0o600);
  else closeSync(openSync(file, 'a', 0o600));
  return file;
}

/** `secrets`: the box secrets are sealed with; by default the key kept in DATA_DIR (secrets/sealed.ts). */
export function openStore(
  dataDir: string,
  options: { random: RandomHex; now: () => number; webhooksQueued?: () => void; secrets?: SecretBox },
): Store {
  const db = openDatabase(privateDatabaseFile(dataDir));
  const box = options.secrets ?? new SecretBox(loadOrCreateSecretsKey(undefined, dataDir, options.random).key);
  const webhooks = new SqliteWebhookRepository(db, options.random, options.now, options.webhooksQueued);
  const campaigns: SqliteCampaignRepository = new SqliteCampaignRepository(db, (campaign) =>
    webhooks.enqueueCampaignEnded(campaign, campaigns.callIds(campaign.id)),
  );
  return {
    sqlite: db,
    agents: promised(new SqliteAgentRepository(db, box)),
    agentTests: promised(new SqliteAgentTestRepository(db, box)),
    calls: promised(
      new SqliteCallRepository(db, (orgId, before, after) => webhooks.enqueueCallEvents(orgId, before, after)),
    ),
    webhooks: promised(webhooks),
    campaigns: promised(campaigns),
    carrierCalls: promised(new SqliteCarrierCallRepository(db)),
    credits: promised(new SqliteCreditRepository(db)),
    idempotency: promised(new SqliteIdempotencyStore(db)),
    nodes: promised(new SqliteNodeLeases(db)),
    providerCredentials: promised(new SqliteProviderCredentialRepository(db, box)),
    carrierAccounts: promised(new SqliteCarrierAccountRepository(db, box)),
    rateWindows: promised(new SqliteRateWindowStore(db)),
    webCallTokens: promised(new SqliteWebCallTokens(db)),
    sealStoredSecrets: async () => sealSqliteSecrets(db, box),
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
