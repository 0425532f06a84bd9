// Where an organization's provider credentials are kept; the store implements it (SQLite and PostgreSQL).
import { CodedError } from '../errors.ts';
import type { ListCredentialsQuery, ProviderCredential } from './schema.ts';

/** A name the organization already gives another credential. */
export class CredentialNameTakenError extends CodedError<'CREDENTIAL_NAME_TAKEN'> {
  constructor(readonly credentialName: string) {
    super('CREDENTIAL_NAME_TAKEN', `the organization already has a provider credential named ${credentialName}`);
  }
}

export interface CredentialPage {
  credentials: ProviderCredential[];
  nextCursor: string | null;
  totalCount: number;
}

export interface ProviderCredentialRepository {
  /** CredentialNameTakenError when the organization has one of that name. */
  insert(orgId: string, credential: ProviderCredential): Promise<void>;
  get(orgId: string, id: string): Promise<ProviderCredential | undefined>;
  byName(orgId: string, name: string): Promise<ProviderCredential | undefined>;
  /** Replaces the stored credential; false when there is none. CredentialNameTakenError on a name clash. */
  update(orgId: string, credential: ProviderCredential): Promise<boolean>;
  delete(orgId: string, id: string): Promise<boolean>;
  /** Keyset pages by created_at, ties by id. */
  list(orgId: string, query: ListCredentialsQuery): Promise<CredentialPage>;
}
