// The store on PostgreSQL (DATABASE_URL=postgres://…): the same repositories as on SQLite, for
// several nodes on several machines sharing one database. Its schema is migrated at start.
import type { RandomHex } from '../../clock.ts';
import type { Store } from '../store.ts';
import { PgAgentTestRepository } from './agent-tests.ts';
import { PgAgentRepository } from './agents.ts';
import { PgCallRepository } from './calls.ts';
import { PgCampaignRepository } from './campaigns.ts';
import { migratePg, PgDb } from './db.ts';
import { PG_MIGRATIONS } from './schema.ts';
import { PgCarrierCallRepository, PgCreditRepository, PgIdempotencyStore, PgNodeLeases, PgRateWindowStore, PgWebCallTokens } from './small.ts';
import { PgWebhookRepository } from './webhooks.ts';

export async function openPgStore(url: string, options: { random: RandomHex; now: () => number; webhooksQueued?: () => void; poolSize?: number }): Promise<Store> {
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
    agents: new PgAgentRepository(db),
    agentTests: new PgAgentTestRepository(db),
    calls: new PgCallRepository(db, (tx, orgId, before, after) => webhooks.enqueueCallEvents(tx, orgId, before, after)),
    campaigns: new PgCampaignRepository(db, (tx, campaign, callIds) => webhooks.enqueueCampaignEnded(tx, campaign, callIds)),
    carrierCalls: new PgCarrierCallRepository(db),
    credits: new PgCreditRepository(db),
    idempotency: new PgIdempotencyStore(db),
    rateWindows: new PgRateWindowStore(db),
    nodes: new PgNodeLeases(db),
    webCallTokens: new PgWebCallTokens(db),
    webhooks,
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
