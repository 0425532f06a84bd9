// The store room, built from config: one SQLite database under DATA_DIR (WAL mode) and the
// repositories the other rooms declare, implemented on it.
import { join } from 'node:path';
import { SqliteAgentRepository } from './agents.ts';
import { SqliteCallRepository } from './calls.ts';
import { SqliteCampaignRepository } from './campaigns.ts';
import { SqliteCarrierCallRepository } from './carrier-calls.ts';
import { SqliteCreditRepository } from './credits.ts';
import { openDatabase, type Db } from './database.ts';

export interface Store {
  db: Db;
  agents: SqliteAgentRepository;
  calls: SqliteCallRepository;
  campaigns: SqliteCampaignRepository;
  carrierCalls: SqliteCarrierCallRepository;
  credits: SqliteCreditRepository;
  /** For readiness: null when the database answers, else why not. */
  problem(): string | null;
  close(): void;
}

export function openStore(dataDir: string): Store {
  const db = openDatabase(join(dataDir, 'voicecall.db'));
  return {
    db,
    agents: new SqliteAgentRepository(db),
    calls: new SqliteCallRepository(db),
    campaigns: new SqliteCampaignRepository(db),
    carrierCalls: new SqliteCarrierCallRepository(db),
    credits: new SqliteCreditRepository(db),
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
