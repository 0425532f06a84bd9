// Agent versions: create (v1, published), patch (next version, unpublished), publish, resolve.
import { ApiError, notFound } from '../errors.ts';
import type { Clock } from '../clock.ts';
import type { AgentRepository } from './repository.ts';
import { AgentConfigSchema, type AgentConfig, type AgentVersion } from './schema.ts';

/** "production" (default), "latest", or a version number (string or integer). */
export type AgentVersionSpec = 'production' | 'latest' | number;

export function parseVersionSpec(value: string | number | null | undefined): AgentVersionSpec {
  if (value === null || value === undefined || value === 'production') return 'production';
  if (value === 'latest') return 'latest';
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new ApiError('BAD_REQUEST', `agent_version: expected "production", "latest" or a version number, got ${JSON.stringify(value)}`);
  }
  return n;
}

export class AgentService {
  constructor(
    private readonly repo: AgentRepository,
    private readonly clock: Clock,
  ) {}

  create(orgId: string, agentId: string, config: AgentConfig): AgentVersion {
    if (this.repo.newest(orgId, agentId)) throw new ApiError('CONFLICT', `agent ${JSON.stringify(agentId)} already exists; PATCH it to make a new version`);
    return this.repo.insertVersion(orgId, agentId, config, { published: true, at: this.clock.now() });
  }

  /** A new unpublished version: the newest configuration with the given fields replaced. */
  patch(orgId: string, agentId: string, changes: Partial<AgentConfig>): AgentVersion {
    const newest = this.repo.newest(orgId, agentId);
    if (!newest) throw notFound('agent', agentId);
    const merged = AgentConfigSchema.safeParse({ ...newest.config, ...changes });
    if (!merged.success) {
      throw new ApiError('BAD_REQUEST', merged.error.issues.map((i) => `body.${i.path.join('.')}: ${i.message}`).join('; '));
    }
    return this.repo.insertVersion(orgId, agentId, merged.data, { published: false, at: this.clock.now() });
  }

  publish(orgId: string, agentId: string): AgentVersion {
    const published = this.repo.publishNewest(orgId, agentId, this.clock.now());
    if (!published) throw notFound('agent', agentId);
    return published;
  }

  resolve(orgId: string, agentId: string, spec: AgentVersionSpec): AgentVersion {
    let found: AgentVersion | undefined;
    if (spec === 'production') {
      found = this.repo.newestPublished(orgId, agentId);
      if (!found && this.repo.newest(orgId, agentId)) {
        throw new ApiError('CONFLICT', `agent ${JSON.stringify(agentId)} has no published version; publish one or ask for "latest"`);
      }
    } else if (spec === 'latest') {
      found = this.repo.newest(orgId, agentId);
    } else {
      found = this.repo.get(orgId, agentId, spec);
      if (!found && this.repo.newest(orgId, agentId)) throw new ApiError('NOT_FOUND', `agent ${JSON.stringify(agentId)} has no version ${spec}`);
    }
    if (!found) throw notFound('agent', agentId);
    return found;
  }

  list(orgId: string): AgentVersion[] {
    return this.repo.listNewest(orgId);
  }

  /**
   * Agents from AGENTS_FILE: the file is their source of truth, so a changed entry becomes a
   * new published version and an unchanged one is left alone (restarts add no versions).
   */
  loadFromFile(orgId: string, entries: { agentId: string; config: AgentConfig }[]): void {
    for (const { agentId, config } of entries) {
      const newest = this.repo.newest(orgId, agentId);
      if (newest && JSON.stringify(newest.config) === JSON.stringify(config)) {
        if (!newest.isPublished) this.repo.publishNewest(orgId, agentId, this.clock.now());
        continue;
      }
      this.repo.insertVersion(orgId, agentId, config, { published: true, at: this.clock.now() });
    }
  }
}

export type AgentView = AgentConfig & { agent_id: string; version: number; is_published: boolean; last_modified: number };

/** An agent as responses show it: every field but the secrets. */
export function agentView(agent: AgentVersion): AgentView {
  const { llm, voice, stt, tools, ...rest } = agent.config;
  const { api_key: _llmKey, ...llmPublic } = llm;
  const { api_key: _voiceKey, ...voicePublic } = voice;
  const { api_key: _sttKey, ...sttPublic } = stt;
  return {
    agent_id: agent.agentId,
    version: agent.version,
    is_published: agent.isPublished,
    last_modified: agent.lastModified,
    ...rest,
    llm: llmPublic,
    voice: voicePublic,
    stt: sttPublic,
    tools: tools.map((tool) => {
      if (tool.type !== 'api') return tool;
      const { headers: _headers, ...toolPublic } = tool;
      return toolPublic;
    }),
  };
}
