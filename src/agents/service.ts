// Agent versions: create (v1, published), patch (next version, unpublished), publish, resolve.
import { ApiError, notFound } from '../errors.ts';
import type { Clock } from '../clock.ts';
import { checkCredentials, credentialsNamed, type CredentialLookup } from './credentials.ts';
import { NumberHeldElsewhereError, NumberTakenError, type AgentRepository } from './repository.ts';
import { refuseUrlFields } from '../schema-fields.ts';
import { AGENT_SECRETS, AGENT_URL_FIELDS, AgentConfigSchema, type AgentConfig, type AgentVersion } from './schema.ts';

/** "production" (default), "latest", or a version number (string or integer). */
export type AgentVersionSpec = 'production' | 'latest' | number;

export function parseVersionSpec(value: string | number | null | undefined): AgentVersionSpec {
  if (value === null || value === undefined || value === 'production') return 'production';
  if (value === 'latest') return 'latest';
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new ApiError(
      'BAD_REQUEST',
      `agent_version: expected "production", "latest" or a version number, got ${JSON.stringify(value)}`,
    );
  }
  return n;
}

export class AgentService {
  constructor(
    private readonly repo: AgentRepository,
    private readonly clock: Clock,
    /** Why the egress policy refuses a URL outright (a literal internal address), or null. */
    private readonly endpointRefusal: (url: string) => string | null = () => null,
    /** The organization's provider credentials by name; absent, an agent naming one is refused. */
    private readonly credentials: CredentialLookup = () => Promise.resolve(undefined),
  ) {}

  async create(orgId: string, agentId: string, config: AgentConfig): Promise<AgentVersion> {
    if (await this.repo.newest(orgId, agentId))
      throw new ApiError('CONFLICT', `agent ${JSON.stringify(agentId)} already exists; PATCH it to make a new version`);
    this.checkEndpoints(config);
    await checkCredentials(orgId, config, this.credentials);
    return this.insert(orgId, agentId, config, true);
  }

  /** A new unpublished version: the newest configuration with the given fields replaced. */
  async patch(orgId: string, agentId: string, changes: Partial<AgentConfig>): Promise<AgentVersion> {
    const newest = await this.repo.newest(orgId, agentId);
    if (!newest) throw notFound('agent', agentId);
    const merged = AgentConfigSchema.safeParse({ ...newest.config, ...changes });
    if (!merged.success) {
      throw new ApiError(
        'BAD_REQUEST',
        merged.error.issues.map((i) => `body.${i.path.join('.')}: ${i.message}`).join('; '),
      );
    }
    this.checkEndpoints(merged.data);
    await checkCredentials(orgId, merged.data, this.credentials);
    return this.insert(orgId, agentId, merged.data, false);
  }

  async publish(orgId: string, agentId: string): Promise<AgentVersion> {
    const published = await this.repo.publishNewest(orgId, agentId, this.clock.now());
    if (!published) throw notFound('agent', agentId);
    return published;
  }

  async resolve(orgId: string, agentId: string, spec: AgentVersionSpec): Promise<AgentVersion> {
    let found: AgentVersion | undefined;
    if (spec === 'production') {
      found = await this.repo.newestPublished(orgId, agentId);
      if (!found && (await this.repo.newest(orgId, agentId))) {
        throw new ApiError(
          'CONFLICT',
          `agent ${JSON.stringify(agentId)} has no published version; publish one or ask for "latest"`,
        );
      }
    } else if (spec === 'latest') {
      found = await this.repo.newest(orgId, agentId);
    } else {
      found = await this.repo.get(orgId, agentId, spec);
      if (!found && (await this.repo.newest(orgId, agentId)))
        throw new ApiError('NOT_FOUND', `agent ${JSON.stringify(agentId)} has no version ${spec}`);
    }
    if (!found) throw notFound('agent', agentId);
    return found;
  }

  /** A literal address the egress policy refuses is a 400 that names the field, not a call that fails later. */
  private checkEndpoints(config: AgentConfig): void {
    refuseUrlFields(AGENT_URL_FIELDS, config, this.endpointRefusal);
  }

  list(orgId: string): Promise<AgentVersion[]> {
    return this.repo.listNewest(orgId);
  }

  /**
   * The organization's agents whose newest or production version names the provider credential: the versions calls
   * use unless they ask for an older one (which then ends with CREDENTIAL_NOT_FOUND at its start).
   */
  async namingCredential(orgId: string, name: string): Promise<string[]> {
    const names = (version: AgentVersion | undefined) =>
      version !== undefined && credentialsNamed(version.config).some((n) => n.name === name);
    const naming: string[] = [];
    for (const newest of await this.repo.listNewest(orgId)) {
      const published = newest.isPublished ? undefined : await this.repo.newestPublished(orgId, newest.agentId);
      if (names(newest) || names(published)) naming.push(newest.agentId);
    }
    return naming;
  }

  /**
   * Agents from AGENTS_FILE: the file is their source of truth, so a changed entry becomes a
   * new published version and an unchanged one is left alone (restarts add no versions).
   */
  async loadFromFile(orgId: string, entries: { agentId: string; config: AgentConfig }[]): Promise<void> {
    for (const { config } of entries) this.checkEndpoints(config);
    for (const { agentId, config } of entries) {
      const newest = await this.repo.newest(orgId, agentId);
      if (newest && JSON.stringify(newest.config) === JSON.stringify(config)) {
        if (!newest.isPublished) await this.repo.publishNewest(orgId, agentId, this.clock.now());
        continue;
      }
      await this.insert(orgId, agentId, config, true);
    }
  }

  /** Whether this organization holds the number (one of its agents lists it). */
  async ownsNumber(orgId: string, number: string): Promise<boolean> {
    return (await this.repo.numberOwner(number)) === orgId;
  }

  private insert(orgId: string, agentId: string, config: AgentConfig, published: boolean): Promise<AgentVersion> {
    return claimingNumbers('body.inbound_numbers', () =>
      this.repo.insertVersion(orgId, agentId, config, { published, at: this.clock.now() }),
    );
  }
}

/** A write that claims numbers (listed in `field` of the request), its refusals as the API's 409 NUMBER_TAKEN. */
export async function claimingNumbers<T>(field: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof NumberTakenError) {
      throw new ApiError(
        'NUMBER_TAKEN',
        `${field}: ${error.number} belongs to another organization; a number can answer for one organization only`,
      );
    }
    if (error instanceof NumberHeldElsewhereError) {
      throw new ApiError(
        'NUMBER_TAKEN',
        `${field}: ${error.number} is already on ${error.holder} of this organization; take it off there first`,
      );
    }
    throw error;
  }
}

export type AgentView = AgentConfig & {
  agent_id: string;
  version: number;
  is_published: boolean;
  last_modified: number;
};

/** An agent as responses show it: every field but the secrets. */
export function agentView(agent: AgentVersion): AgentView {
  return {
    agent_id: agent.agentId,
    version: agent.version,
    is_published: agent.isPublished,
    last_modified: agent.lastModified,
    ...AGENT_SECRETS.hide(agent.config),
  };
}
