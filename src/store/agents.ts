// Agent versions: every PATCH adds a row; publishing flags the newest one.
import { AGENT_SECRETS, type AgentConfig, type AgentVersion } from '../agents/schema.ts';
import type { SecretBox } from '../secrets/sealed.ts';
import type Database from 'better-sqlite3';
import { NumberTakenError } from '../agents/repository.ts';
import type { Db } from './database.ts';
import { RELEASE_UNLISTED_NUMBERS_SQLITE } from './numbers.ts';

export interface AgentRow {
  org_id: string;
  agent_id: string;
  version: number;
  is_published: number;
  created_at: number;
  config: string;
}

/** The config column of a version: its secrets sealed. */
export const storedConfig = (config: AgentConfig, box: SecretBox): string =>
  JSON.stringify(AGENT_SECRETS.seal(config, box));

/** A stored row as the runtime uses it: its secrets opened (plaintext from before sealing passes as it is). */
export function toVersion(row: AgentRow, box: SecretBox): AgentVersion {
  return {
    orgId: row.org_id,
    agentId: row.agent_id,
    version: row.version,
    isPublished: row.is_published === 1,
    lastModified: row.created_at,
    config: AGENT_SECRETS.open(JSON.parse(row.config) as AgentConfig, box),
  };
}

export class SqliteAgentRepository {
  /** Statements prepared once: every inbound call looks its agent up twice. */
  private readonly statements = new Map<string, Database.Statement<unknown[]>>();

  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
  ) {}

  private prepare(sql: string): Database.Statement<unknown[]> {
    let statement = this.statements.get(sql);
    if (!statement) this.statements.set(sql, (statement = this.db.prepare(sql)));
    return statement;
  }

  insertVersion(
    orgId: string,
    agentId: string,
    config: AgentConfig,
    options: { published: boolean; at: number },
  ): AgentVersion {
    return this.db
      .transaction(() => {
        for (const number of config.inbound_numbers) {
          this.prepare('INSERT OR IGNORE INTO number_owners (number, org_id, claimed_at) VALUES (?, ?, ?)').run(
            number,
            orgId,
            options.at,
          );
          if (this.numberOwner(number) !== orgId) throw new NumberTakenError(number);
        }
        const top = this.prepare('SELECT max(version) AS v FROM agent_versions WHERE org_id = ? AND agent_id = ?').get(
          orgId,
          agentId,
        ) as { v: number | null };
        const version = (top.v ?? 0) + 1;
        this.prepare(
          'INSERT INTO agent_versions (org_id, agent_id, version, is_published, created_at, config) VALUES (?, ?, ?, ?, ?, ?)',
        ).run(orgId, agentId, version, options.published ? 1 : 0, options.at, storedConfig(config, this.box));
        this.releaseUnlisted(orgId);
        return { orgId, agentId, version, isPublished: options.published, lastModified: options.at, config };
      })
      .immediate();
  }

  get(orgId: string, agentId: string, version: number): AgentVersion | undefined {
    const row = this.prepare('SELECT * FROM agent_versions WHERE org_id = ? AND agent_id = ? AND version = ?').get(
      orgId,
      agentId,
      version,
    ) as AgentRow | undefined;
    return row ? toVersion(row, this.box) : undefined;
  }

  newest(orgId: string, agentId: string): AgentVersion | undefined {
    const row = this.prepare(
      'SELECT * FROM agent_versions WHERE org_id = ? AND agent_id = ? ORDER BY version DESC LIMIT 1',
    ).get(orgId, agentId) as AgentRow | undefined;
    return row ? toVersion(row, this.box) : undefined;
  }

  newestPublished(orgId: string, agentId: string): AgentVersion | undefined {
    const row = this.prepare(
      'SELECT * FROM agent_versions WHERE org_id = ? AND agent_id = ? AND is_published = 1 ORDER BY version DESC LIMIT 1',
    ).get(orgId, agentId) as AgentRow | undefined;
    return row ? toVersion(row, this.box) : undefined;
  }

  publishNewest(orgId: string, agentId: string, at: number): AgentVersion | undefined {
    return this.db
      .transaction(() => {
        const newest = this.newest(orgId, agentId);
        if (!newest) return undefined;
        if (newest.isPublished) return newest;
        this.prepare(
          'UPDATE agent_versions SET is_published = 1, created_at = ? WHERE org_id = ? AND agent_id = ? AND version = ?',
        ).run(at, orgId, agentId, newest.version);
        this.releaseUnlisted(orgId);
        return { ...newest, isPublished: true, lastModified: at };
      })
      .immediate();
  }

  listNewest(orgId: string): AgentVersion[] {
    const rows = this.prepare(
      `SELECT a.* FROM agent_versions a
         JOIN (SELECT agent_id, max(version) AS v FROM agent_versions WHERE org_id = ? GROUP BY agent_id) m
           ON a.agent_id = m.agent_id AND a.version = m.v
         WHERE a.org_id = ? ORDER BY a.agent_id`,
    ).all(orgId, orgId) as AgentRow[];
    return rows.map((row) => toVersion(row, this.box));
  }

  findByInboundNumber(number: string): AgentVersion | undefined {
    const owner = this.numberOwner(number);
    if (owner === undefined) return undefined;
    // Few agents per organization: scanning its published heads is simpler than a side table.
    const rows = this.prepare(
      `SELECT a.* FROM agent_versions a
         JOIN (SELECT agent_id, max(version) AS v FROM agent_versions WHERE org_id = ? AND is_published = 1 GROUP BY agent_id) m
           ON a.agent_id = m.agent_id AND a.version = m.v
         WHERE a.org_id = ? ORDER BY a.created_at`,
    ).all(owner, owner) as AgentRow[];
    for (const row of rows) {
      const version = toVersion(row, this.box);
      if (version.config.inbound_numbers.includes(number)) return version;
    }
    return undefined;
  }

  numberOwner(number: string): string | undefined {
    return (
      this.prepare('SELECT org_id FROM number_owners WHERE number = ?').get(number) as { org_id: string } | undefined
    )?.org_id;
  }

  /**
   * Numbers the organization holds that neither the newest nor the published version of any of its agents lists,
   * nor any of its carrier accounts.
   */
  private releaseUnlisted(orgId: string): void {
    this.prepare(RELEASE_UNLISTED_NUMBERS_SQLITE).run(orgId, orgId, orgId);
  }
}
