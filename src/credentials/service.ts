// Provider credentials through the API: created, read, changed, deleted and listed within one organization. A
// credential an agent of the organization names cannot be deleted or renamed (409 naming the agents): the agent would
// otherwise fail at its next call.
import { newId, type Clock, type RandomHex } from '../clock.ts';
import { ApiError, notFound } from '../errors.ts';
import { CredentialNameTakenError, type CredentialPage, type ProviderCredentialRepository } from './repository.ts';
import type { ListCredentialsQuery, ProviderCredential } from './schema.ts';
import type { z } from 'zod';
import type { CreateCredentialBody, PatchCredentialBody } from './schema.ts';

export interface ProviderCredentialServiceDeps {
  repo: ProviderCredentialRepository;
  clock: Clock;
  random: RandomHex;
  /** Why the egress policy refuses a URL outright (a literal internal address), or null. */
  refusal: (url: string) => string | null;
  /** The ids of the organization's agents whose versions in use name the credential. */
  agentsNaming: (orgId: string, name: string) => Promise<string[]>;
}

/** A ws:// or wss:// address is judged as the http:// or https:// one of the same place (net/websocket.ts). */
function refusalOf(url: string, refusal: (url: string) => string | null): string | null {
  return refusal(url.replace(/^ws/i, 'http'));
}

export class ProviderCredentialService {
  constructor(private readonly d: ProviderCredentialServiceDeps) {}

  async create(orgId: string, body: z.infer<typeof CreateCredentialBody>): Promise<ProviderCredential> {
    this.checkBaseUrl(body.base_url);
    const now = this.d.clock.now();
    const credential: ProviderCredential = {
      provider_credential_id: newId('pcred', this.d.random),
      provider: body.provider,
      name: body.name,
      api_key: body.api_key,
      base_url: body.base_url ?? null,
      created_at: now,
      updated_at: now,
    };
    await this.named(() => this.d.repo.insert(orgId, credential));
    return credential;
  }

  async get(orgId: string, id: string): Promise<ProviderCredential> {
    const found = await this.d.repo.get(orgId, id);
    if (!found) throw notFound('provider credential', id);
    return found;
  }

  /** The given fields replace the stored ones; the provider stays (a key of another provider is another credential). */
  async patch(orgId: string, id: string, body: z.infer<typeof PatchCredentialBody>): Promise<ProviderCredential> {
    const current = await this.get(orgId, id);
    this.checkBaseUrl(body.base_url ?? undefined);
    if (body.name !== undefined && body.name !== current.name) await this.refuseInUse(orgId, current.name, 'renamed');
    const next: ProviderCredential = {
      ...current,
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.api_key !== undefined ? { api_key: body.api_key } : {}),
      ...(body.base_url !== undefined ? { base_url: body.base_url } : {}),
      updated_at: this.d.clock.now(),
    };
    const updated = await this.named(() => this.d.repo.update(orgId, next));
    if (!updated) throw notFound('provider credential', id);
    return next;
  }

  async delete(orgId: string, id: string): Promise<void> {
    const current = await this.get(orgId, id);
    await this.refuseInUse(orgId, current.name, 'deleted');
    if (!(await this.d.repo.delete(orgId, id))) throw notFound('provider credential', id);
  }

  list(orgId: string, query: ListCredentialsQuery): Promise<CredentialPage> {
    return this.d.repo.list(orgId, query);
  }

  private checkBaseUrl(url: string | undefined): void {
    if (url === undefined) return;
    const why = refusalOf(url, this.d.refusal);
    if (why) throw new ApiError('BAD_REQUEST', `body.base_url: ${url} is ${why}, which the egress policy refuses`);
  }

  private async refuseInUse(orgId: string, name: string, change: 'deleted' | 'renamed'): Promise<void> {
    const agents = await this.d.agentsNaming(orgId, name);
    if (agents.length > 0) {
      throw new ApiError(
        'CREDENTIAL_IN_USE',
        `provider credential ${JSON.stringify(name)} cannot be ${change}: agents ${agents.map((a) => JSON.stringify(a)).join(', ')} name it; change their credential first`,
      );
    }
  }

  private async named<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (error instanceof CredentialNameTakenError) {
        throw new ApiError(
          'CREDENTIAL_NAME_TAKEN',
          `body.name: the organization already has a provider credential named ${JSON.stringify(error.credentialName)}`,
        );
      }
      throw error;
    }
  }
}
