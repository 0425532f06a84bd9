// Provider credentials: an organization's keys for the speech and model providers its agents use, kept
// once under a name and named by agents (`stt.credential`, `voice.credential`, `llm.credential`) instead
// of a raw key in every agent. The key is write-only: never in a response, sealed in the store
// (secrets/fields.ts) with the one SecretBox every secret is sealed with.
import { z } from 'zod';
import { SecretFields, writeOnlySecret } from '../secrets/fields.ts';

/** The providers a credential can be for: the streaming speech providers, the speech-to-speech models, OpenAI. */
export const CREDENTIAL_PROVIDERS = ['deepgram', 'assemblyai', 'elevenlabs', 'cartesia', 'openai', 'gemini'] as const;
export type CredentialProvider = (typeof CREDENTIAL_PROVIDERS)[number];

/**
 * The provider's own address, where an engine needs one and neither the credential nor the agent gives it. Only
 * OpenAI's is filled in: its engines (chat completions, /audio/*) take no address of their own; the streaming
 * engines know their provider's address themselves.
 */
export const PROVIDER_DEFAULT_BASE_URLS: Partial<Record<CredentialProvider, string>> = {
  openai: 'https://api.openai.com/v1',
};

/** The agent sections that name a credential. */
export type CredentialSection = 'stt' | 'voice' | 'llm';

/**
 * The provider whose credential an engine takes, or null for an engine that takes none (the embedded ones). An
 * engine is a provider's when it is named after it: `deepgram`, or `openai-realtime`, `gemini_live` for an engine
 * of that provider. The model section without an engine is the OpenAI-compatible chat-completions client.
 */
export function credentialProviderOf(
  section: CredentialSection,
  engine: string | undefined,
): CredentialProvider | null {
  if (engine === undefined || (section === 'llm' && engine === 'chat-completions'))
    return section === 'llm' ? 'openai' : null;
  return (
    CREDENTIAL_PROVIDERS.find((p) => engine === p || engine.startsWith(`${p}-`) || engine.startsWith(`${p}_`)) ?? null
  );
}

/** Where a provider is: https:// or wss://, or http:// and ws:// for a local stand-in; the egress policy applies. */
const BaseUrl = z
  .url({ protocol: /^(https?|wss?)$/ })
  .max(2000)
  .describe(
    "where the provider is (https:// or wss://; http:// or ws:// for a local stand-in); the egress policy applies. Absent: the provider's own address",
  );

const CredentialName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'letters, digits, _ . and -, at most 64, starting with a letter or digit')
  .describe('what agents name it by (stt.credential, voice.credential, llm.credential); unique in the organization');

export const CreateCredentialBody = z.strictObject({
  provider: z.enum(CREDENTIAL_PROVIDERS).describe('whose key it is'),
  name: CredentialName,
  api_key: writeOnlySecret("the provider's API key; write-only: never returned"),
  base_url: BaseUrl.optional(),
});

export const PatchCredentialBody = z.strictObject({
  name: CredentialName.optional(),
  api_key: writeOnlySecret("the provider's API key; write-only: never returned").optional(),
  base_url: BaseUrl.nullable().optional().describe("null: back to the provider's own address"),
});

export const CredentialIdParams = z.strictObject({ provider_credential_id: z.string().min(1).max(200) });

export const CredentialResponse = z.object({
  provider_credential_id: z.string(),
  provider: z.enum(CREDENTIAL_PROVIDERS),
  name: z.string(),
  base_url: z.string().nullable().describe("null: the provider's own address"),
  created_at: z.int().describe('Unix epoch ms'),
  updated_at: z.int().describe('Unix epoch ms'),
});

export const ListCredentialsBody = z.strictObject({
  filter_criteria: z
    .strictObject({
      provider: z.array(z.enum(CREDENTIAL_PROVIDERS)).max(CREDENTIAL_PROVIDERS.length).optional(),
      name: z.array(z.string().max(64)).max(100).optional(),
    })
    .optional(),
  sort_order: z.enum(['ascending', 'descending']).default('descending').describe('by created_at, ties by id'),
  limit: z.int().min(1).max(500).default(50),
  pagination_key: z.string().max(1000).nullable().optional(),
});

export const ListCredentialsResponse = z.object({
  provider_credentials: z.array(CredentialResponse),
  next_cursor: z.string().nullable(),
  total_count: z.int(),
});

/** A credential as the store keeps it (api_key sealed there) and the runtime uses it (api_key open). */
export const ProviderCredentialSchema = CredentialResponse.extend({
  api_key: writeOnlySecret(),
});
export type ProviderCredential = z.infer<typeof ProviderCredentialSchema>;
export type CredentialView = z.infer<typeof CredentialResponse>;
export type ListCredentialsQuery = z.infer<typeof ListCredentialsBody>;

/** The write-only fields of a stored credential: its api_key. */
export const CREDENTIAL_SECRETS = new SecretFields(ProviderCredentialSchema);

/** A credential as responses show it: everything but the key. */
export function credentialView(credential: ProviderCredential): CredentialView {
  const { api_key: _key, ...view } = credential;
  return view;
}
