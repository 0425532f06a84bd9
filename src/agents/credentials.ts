// The provider credentials an agent names (`stt.credential`, `voice.credential`, `llm.credential`): checked when
// the agent is saved (the organization has it, and its provider fits the section's engine), and resolved when a call
// starts into the section's api_key and base_url, in memory only (never written back to the agent or the record).
// Where a section has both its own api_key and a credential, the credential's key wins, and so does its base_url
// when it has one (docs/providers/credentials.md). Each entry of a section's `fallback` names its own credential,
// checked and resolved the same way.
import {
  credentialProviderOf,
  PROVIDER_DEFAULT_BASE_URLS,
  type CredentialSection,
  type ProviderCredential,
} from '../credentials/schema.ts';
import { ApiError, CodedError } from '../errors.ts';
import type { AgentConfig } from './schema.ts';

/** The organization's credential of that name, if it has one. */
export type CredentialLookup = (orgId: string, name: string) => Promise<ProviderCredential | undefined>;

const SECTIONS: readonly CredentialSection[] = ['stt', 'voice', 'llm'];

interface NamedCredential {
  section: CredentialSection;
  /** Which entry of the section's `fallback` names it; null: the section itself. */
  fallback: number | null;
  name: string;
  /** The entry's engine, when it has one (the model section has none for chat completions). */
  engine: string | undefined;
}

/** Where the credential is named, as the fields spell it: `voice.credential`, `voice.fallback[0].credential`. */
const fieldOf = (n: NamedCredential): string =>
  `${n.section}${n.fallback === null ? '' : `.fallback[${n.fallback}]`}.credential`;

/** A call whose agent names a credential the organization no longer has, or one that no longer fits its engine. */
export class CredentialUnavailableError extends CodedError<'CREDENTIAL_NOT_FOUND' | 'CREDENTIAL_MISMATCH'> {}

function stringAt(section: object, key: string): string | undefined {
  const value: unknown = Reflect.get(section, key);
  return typeof value === 'string' ? value : undefined;
}

/**
 * A credential's address as its engine speaks to it: the streaming engines (every engine named after a provider but
 * the OpenAI-compatible HTTP ones) open a WebSocket, so a credential given as https:// (or http:// for a stand-in)
 * is reached as wss:// (ws://) at the same place.
 */
function addressFor(engine: string | undefined, url: string): string {
  if (engine === undefined || engine === 'openai' || engine === 'chat-completions') return url;
  return url.replace(/^http(s?):/i, 'ws$1:');
}

/** Every credential the agent names, section by section, each section's own before its fallbacks'. */
export function credentialsNamed(config: AgentConfig): NamedCredential[] {
  const named: NamedCredential[] = [];
  for (const section of SECTIONS) {
    const entries: object[] = [config[section], ...(config[section].fallback ?? [])];
    entries.forEach((entry, i) => {
      const name = stringAt(entry, 'credential');
      if (name !== undefined)
        named.push({ section, fallback: i === 0 ? null : i - 1, name, engine: stringAt(entry, 'engine') });
    });
  }
  return named;
}

/** Why the credential cannot serve the section (its provider does not fit the engine), or null. */
function misfit(named: NamedCredential, credential: ProviderCredential): string | null {
  const expected = credentialProviderOf(named.section, named.engine);
  const engine =
    named.engine === undefined
      ? 'the OpenAI-compatible model client'
      : `${fieldOf(named).replace(/credential$/, 'engine')} ${named.engine}`;
  if (expected === null) return `${engine} takes no provider credential`;
  if (credential.provider !== expected)
    return `${JSON.stringify(credential.name)} is for ${credential.provider}; ${engine} takes only ${expected} credentials`;
  return null;
}

/** A 400 naming each field whose credential the organization does not have or whose provider does not fit. */
export async function checkCredentials(orgId: string, config: AgentConfig, lookup: CredentialLookup): Promise<void> {
  const problems: string[] = [];
  for (const named of credentialsNamed(config)) {
    const field = `body.${fieldOf(named)}`;
    const credential = await lookup(orgId, named.name);
    if (!credential) {
      problems.push(`${field}: the organization has no provider credential named ${JSON.stringify(named.name)}`);
      continue;
    }
    const why = misfit(named, credential);
    if (why) problems.push(`${field}: ${why}`);
  }
  if (problems.length > 0) throw new ApiError('BAD_REQUEST', problems.join('; '));
}

/**
 * The agent's configuration with each named credential's api_key and base_url in its section (the credential wins
 * over the section's own; OpenAI's own address where neither gives one). CredentialUnavailableError when the
 * organization no longer has one (deleted after the agent was saved) or it no longer fits.
 */
export async function withCredentials(
  orgId: string,
  config: AgentConfig,
  lookup: CredentialLookup,
): Promise<AgentConfig> {
  const named = credentialsNamed(config);
  if (named.length === 0) return config;
  // Copies of each section and its fallback list, filled in below; the agent given is left as it was.
  const resolved = {
    ...config,
    stt: { ...config.stt, fallback: config.stt.fallback && [...config.stt.fallback] },
    voice: { ...config.voice, fallback: config.voice.fallback && [...config.voice.fallback] },
    llm: { ...config.llm, fallback: config.llm.fallback && [...config.llm.fallback] },
  };
  for (const n of named) {
    const credential = await lookup(orgId, n.name);
    const field = fieldOf(n);
    if (!credential) {
      throw new CredentialUnavailableError(
        'CREDENTIAL_NOT_FOUND',
        `${field} names the provider credential ${JSON.stringify(n.name)}, which the organization no longer has`,
      );
    }
    const why = misfit(n, credential);
    if (why) throw new CredentialUnavailableError('CREDENTIAL_MISMATCH', `${field}: ${why}`);
    const section = resolved[n.section];
    const entry: object = n.fallback === null ? section : section.fallback![n.fallback]!;
    const given = credential.base_url ?? stringAt(entry, 'base_url') ?? PROVIDER_DEFAULT_BASE_URLS[credential.provider];
    const baseUrl = given === undefined ? undefined : addressFor(n.engine, given);
    const filled = { ...entry, api_key: credential.api_key, ...(baseUrl ? { base_url: baseUrl } : {}) };
    if (n.fallback === null) Object.assign(section, filled);
    else Object.assign(section.fallback!, { [n.fallback]: filled });
  }
  return resolved;
}
