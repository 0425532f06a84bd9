// The store on PostgreSQL (DATABASE_URL=postgres://…): the same repositories as on SQLite, for
// several nodes on several machines sharing one database. Its schema is migrated at start.
import type { RandomHex } from '../../clock.ts';
import type { Store } from '../store.ts';
import { PgAgentTestRepository } from './agent-tests.ts';
import { PgAgentRepository } from './agents.ts';
import { PgCallRepository } from './calls.ts';
import { PgCampaignRepository } from './campaigns.ts';
import { migratePg, PgDb } from './db.ts';
import { PgProviderCredentialRepository } from './provider-credentials.ts';
import { PgCarrierAccountRepository } from './carrier-accounts.ts';
import { PG_MIGRATIONS } from './schema.ts';
import {
  PgCarrierCallRepository,
  PgCreditRepository,
  PgIdempotencyStore,
  PgNodeLeases,
  PgRateWindowStore,
  PgWebCallTokens,
} from './small.ts';
import { PgWebhookRepository } from './webhooks.ts';
import type { SecretBox } from '../../secrets/sealed.ts';
import { resealed, SECRET_DOCUMENTS } from '../secrets.ts';

/** See Store.sealStoredSecrets; a row another node changed meanwhile is left to that node (compare and set). */
async function sealPgSecrets(db: PgDb, box: SecretBox): Promise<number> {
  let rewritten = 0;
  for (const { table, column, fields } of SECRET_DOCUMENTS) {
    const rows = await db.rows<{ id: string; text: string }>(
      `SELECT ctid::text AS id, ${column} AS text FROM ${table}`,
    );
    for (const row of rows) {
      const next = resealed(row.text, fields, box);
      if (next !== null)
        rewritten += await db.run(`UPDATE ${table} SET ${column} = ? WHERE ctid = ?::tid AND ${column} = ?`, [
          next,
          row.id,
          row.text,
        ]);
    }
  }
  return rewritten;
}

/** `secrets`: the box secrets are sealed with; every node sharing the database must hold the same key. */
export async function openPgStore(
  url: string,
  options: { random: RandomHex; now: () => number; webhooksQueued?: () => void; poolSize?: number; secrets: SecretBox },
): Promise<Store> {
  const db = new PgDb(url, { max: options.poolSize ?? 10 });
  try {
    await migratePg(db, PG_MIGRATIONS);
  } catch (error) {
    await db.close();
    throw new Error(`PostgreSQL store at ${redacted(url)}: ${(error as Error).message}`, { cause: error });
  }
  const webhooks = new PgWebhookRepository(db, options.random, options.now, options.webhooksQueued);
  return {
    sqlite: undefined,
    agents: new PgAgentRepository(db, options.secrets),
    agentTests: new PgAgentTestRepository(db, options.secrets),
    calls: new PgCallRepository(db, (tx, orgId, before, after) => webhooks.enqueueCallEvents(tx, orgId, before, after)),
    campaigns: new PgCampaignRepository(db, (tx, campaign, callIds) =>
      webhooks.enqueueCampaignEnded(tx, campaign, callIds),
    ),
    carrierCalls: new PgCarrierCallRepository(db),
    credits: new PgCreditRepository(db),
    idempotency: new PgIdempotencyStore(db),
    rateWindows: new PgRateWindowStore(db),
    nodes: new PgNodeLeases(db),
    providerCredentials: new PgProviderCredentialRepository(db, options.secrets),
    carrierAccounts: new PgCarrierAccountRepository(db, options.secrets),
    webCallTokens: new PgWebCallTokens(db),
    webhooks,
    sealStoredSecrets: () => sealPgSecrets(db, options.secrets),
    async problem() {
      try {
        await db.row('SELECT 1');
        return null;
      } catch (error) {
        return `store unavailable: ${(error as Error).message}`;
      }
    },
    close: () => db.close(),
  };
}

/** The URL without its password, for messages. */
export function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the configured DATABASE_URL';
  }
}
