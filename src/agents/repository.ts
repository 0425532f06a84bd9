// Where agent versions are kept: the store implements this (SQLite now, PostgreSQL for several nodes).
import type { AgentConfig, AgentVersion } from './schema.ts';

export interface AgentRepository {
  /** Creates a new version; `version` must be one past the newest (checked in the transaction). */
  insertVersion(orgId: string, agentId: string, config: AgentConfig, options: { published: boolean; at: number }): AgentVersion;
  get(orgId: string, agentId: string, version: number): AgentVersion | undefined;
  newest(orgId: string, agentId: string): AgentVersion | undefined;
  newestPublished(orgId: string, agentId: string): AgentVersion | undefined;
  publishNewest(orgId: string, agentId: string, at: number): AgentVersion | undefined;
  /** Newest version of every agent of the organization, by agent id. */
  listNewest(orgId: string): AgentVersion[];
  /** Agents whose configuration lists this inbound number (any organization), newest published version. */
  findByInboundNumber(number: string): AgentVersion | undefined;
}
