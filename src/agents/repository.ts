// Where agent versions are kept: the store implements this (SQLite now, PostgreSQL for several nodes).
import { CodedError } from '../errors.ts';
import type { AgentConfig, AgentVersion } from './schema.ts';

/** An inbound number another organization already holds. */
export class NumberTakenError extends CodedError<'NUMBER_TAKEN'> {
  constructor(readonly number: string) {
    super('NUMBER_TAKEN', `${number} belongs to another organization`);
  }
}

/** A number another record of the same organization (a carrier account, a SIP trunk) already holds. */
export class NumberHeldElsewhereError extends CodedError<'NUMBER_TAKEN'> {
  constructor(
    readonly number: string,
    /** What holds it, as a person reads it: "carrier account ca_…". */
    readonly holder: string,
  ) {
    super('NUMBER_TAKEN', `${number} is on ${holder}`);
  }
}

export interface AgentRepository {
  /**
   * Creates a new version; `version` must be one past the newest (checked in the transaction).
   * Its inbound numbers become the organization's in the same transaction: NumberTakenError when
   * another organization holds one. A number no version in use lists any more is let go.
   */
  insertVersion(
    orgId: string,
    agentId: string,
    config: AgentConfig,
    options: { published: boolean; at: number },
  ): Promise<AgentVersion>;
  get(orgId: string, agentId: string, version: number): Promise<AgentVersion | undefined>;
  newest(orgId: string, agentId: string): Promise<AgentVersion | undefined>;
  newestPublished(orgId: string, agentId: string): Promise<AgentVersion | undefined>;
  publishNewest(orgId: string, agentId: string, at: number): Promise<AgentVersion | undefined>;
  /** Newest version of every agent of the organization, by agent id. */
  listNewest(orgId: string): Promise<AgentVersion[]>;
  /** The agent of the number's organization whose newest published version lists it. */
  findByInboundNumber(number: string): Promise<AgentVersion | undefined>;
  /** The organization that holds this number, if any. */
  numberOwner(number: string): Promise<string | undefined>;
}
