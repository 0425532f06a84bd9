// Agent versions on PostgreSQL. A new version of an agent is written under a lock of that agent
// (its number is one past the newest), and its inbound numbers are claimed in the same transaction.
import { NumberTakenError, type AgentRepository } from '../../agents/repository.ts';
import type { AgentConfig, AgentVersion } from '../../agents/schema.ts';
import { storedConfig, toVersion, type AgentRow } from '../agents.ts';
import type { SecretBox } from '../../secrets/sealed.ts';
import { RELEASE_UNLISTED_NUMBERS_PG } from '../numbers.ts';
import { lockFor, type PgDb, type Queryable } from './db.ts';

type PgAgentRow = Omit<AgentRow, 'is_published'> & { is_published: boolean };

export class PgAgentRepository implements AgentRepository {
  constructor(
    private readonly db: PgDb,
    private readonly box: SecretBox,
  ) {}

  private readonly version = (row: PgAgentRow): AgentVersion =>
    toVersion({ ...row, is_published: row.is_published ? 1 : 0 }, this.box);

  insertVersion(
    orgId: string,
    agentId: string,
    config: AgentConfig,
    options: { published: boolean; at: number },
  ): Promise<AgentVersion> {
    return this.db.transaction(async (tx) => {
      await lockFor(tx, `agent:${orgId}:${agentId}`);
      for (const number of config.inbound_numbers) {
        await lockFor(tx, `number:${number}`);
        await tx.run(
          'INSERT INTO number_owners (number, org_id, claimed_at) VALUES (?, ?, ?) ON CONFLICT (number) DO NOTHING',
          [number, orgId, options.at],
        );
        if ((await this.ownerOn(tx, number)) !== orgId) throw new NumberTakenError(number);
      }
      const top = await tx.row<{ v: number | null }>(
        'SELECT max(version) AS v FROM agent_versions WHERE org_id = ? AND agent_id = ?',
        [orgId, agentId],
      );
      const next = (top?.v ?? 0) + 1;
      await tx.run(
        'INSERT INTO agent_versions (org_id, agent_id, version, is_published, created_at, config) VALUES (?, ?, ?, ?, ?, ?)',
        [orgId, agentId, next, options.published, options.at, storedConfig(config, this.box)],
      );
      await this.releaseUnlisted(tx, orgId);
      return { orgId, agentId, version: next, isPublished: options.published, lastModified: options.at, config };
    });
  }

  async get(orgId: string, agentId: string, v: number): Promise<AgentVersion | undefined> {
    const row = await this.db.row<PgAgentRow>(
      'SELECT * FROM agent_versions WHERE org_id = ? AND agent_id = ? AND version = ?',
      [orgId, agentId, v],
    );
    return row ? this.version(row) : undefined;
  }

  newest(orgId: string, agentId: string): Promise<AgentVersion | undefined> {
    return this.newestOn(this.db, orgId, agentId);
  }

  private async newestOn(q: Queryable, orgId: string, agentId: string): Promise<AgentVersion | undefined> {
    const row = await q.row<PgAgentRow>(
      'SELECT * FROM agent_versions WHERE org_id = ? AND agent_id = ? ORDER BY version DESC LIMIT 1',
      [orgId, agentId],
    );
    return row ? this.version(row) : undefined;
  }

  async newestPublished(orgId: string, agentId: string): Promise<AgentVersion | undefined> {
    const row = await this.db.row<PgAgentRow>(
      'SELECT * FROM agent_versions WHERE org_id = ? AND agent_id = ? AND is_published ORDER BY version DESC LIMIT 1',
      [orgId, agentId],
    );
    return row ? this.version(row) : undefined;
  }

  publishNewest(orgId: string, agentId: string, at: number): Promise<AgentVersion | undefined> {
    return this.db.transaction(async (tx) => {
      await lockFor(tx, `agent:${orgId}:${agentId}`);
      const newest = await this.newestOn(tx, orgId, agentId);
      if (!newest) return undefined;
      if (newest.isPublished) return newest;
      await tx.run(
        'UPDATE agent_versions SET is_published = TRUE, created_at = ? WHERE org_id = ? AND agent_id = ? AND version = ?',
        [at, orgId, agentId, newest.version],
      );
      await this.releaseUnlisted(tx, orgId);
      return { ...newest, isPublished: true, lastModified: at };
    });
  }

  async listNewest(orgId: string): Promise<AgentVersion[]> {
    const rows = await this.db.rows<PgAgentRow>(
      `SELECT a.* FROM agent_versions a
       JOIN (SELECT agent_id, max(version) AS v FROM agent_versions WHERE org_id = ? GROUP BY agent_id) m ON a.agent_id = m.agent_id AND a.version = m.v
       WHERE a.org_id = ? ORDER BY a.agent_id`,
      [orgId, orgId],
    );
    return rows.map(this.version);
  }

  async findByInboundNumber(number: string): Promise<AgentVersion | undefined> {
    const owner = await this.ownerOn(this.db, number);
    if (owner === undefined) return undefined;
    const rows = await this.db.rows<PgAgentRow>(
      `SELECT a.* FROM agent_versions a
       JOIN (SELECT agent_id, max(version) AS v FROM agent_versions WHERE org_id = ? AND is_published GROUP BY agent_id) m ON a.agent_id = m.agent_id AND a.version = m.v
       WHERE a.org_id = ? ORDER BY a.created_at`,
      [owner, owner],
    );
    return rows.map(this.version).find((v) => v.config.inbound_numbers.includes(number));
  }

  numberOwner(number: string): Promise<string | undefined> {
    return this.ownerOn(this.db, number);
  }

  private async ownerOn(q: Queryable, number: string): Promise<string | undefined> {
    return (await q.row<{ org_id: string }>('SELECT org_id FROM number_owners WHERE number = ?', [number]))?.org_id;
  }

  /**
   * Numbers the organization holds that neither the newest nor the published version of any of its agents lists,
   * nor any of its carrier accounts.
   */
  private async releaseUnlisted(tx: Queryable, orgId: string): Promise<void> {
    await tx.run(RELEASE_UNLISTED_NUMBERS_PG, [orgId, orgId, orgId]);
  }
}
