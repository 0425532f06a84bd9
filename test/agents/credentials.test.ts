// Which provider's credential each engine takes, and how a named credential fills its section when a call starts:
// the credential's key wins over the section's own, its address too when it has one; OpenAI's own address where
// neither gives one; a credential gone or of another provider is a coded error, not a call with the wrong key.
import { describe, expect, it } from 'vitest';
import {
  checkCredentials,
  CredentialUnavailableError,
  withCredentials,
  type CredentialLookup,
} from '../../src/agents/credentials.ts';
import { AgentConfigSchema } from '../../src/agents/schema.ts';
import { credentialProviderOf, type ProviderCredential } from '../../src/credentials/schema.ts';

const credential = (name: string, extra: Partial<ProviderCredential> = {}): ProviderCredential => ({
  provider_credential_id: `pcred_${name}`,
  provider: 'openai',
  name,
  api_key: `key-${name}`,
  base_url: null,
  created_at: 1,
  updated_at: 1,
  ...extra,
});

const lookupOf =
  (org: string, ...credentials: ProviderCredential[]): CredentialLookup =>
  (orgId, name) =>
    Promise.resolve(orgId === org ? credentials.find((c) => c.name === name) : undefined);

describe('credentialProviderOf', () => {
  it('gives each engine its provider, by name or name prefix; embedded engines take none; the model client takes openai', () => {
    expect(credentialProviderOf('stt', 'deepgram')).toBe('deepgram');
    expect(credentialProviderOf('stt', 'assemblyai')).toBe('assemblyai');
    expect(credentialProviderOf('voice', 'elevenlabs')).toBe('elevenlabs');
    expect(credentialProviderOf('voice', 'cartesia')).toBe('cartesia');
    expect(credentialProviderOf('voice', 'openai')).toBe('openai');
    expect(credentialProviderOf('llm', 'openai-realtime')).toBe('openai');
    expect(credentialProviderOf('llm', 'gemini_live')).toBe('gemini');
    expect(credentialProviderOf('llm', 'gemini-live')).toBe('gemini');
    expect(credentialProviderOf('llm', undefined)).toBe('openai');
    for (const embedded of ['flite', 'espeak', 'moonshine', 'pocketsphinx']) {
      expect(credentialProviderOf('voice', embedded)).toBeNull();
    }
    expect(credentialProviderOf('stt', undefined)).toBeNull();
    // Only a whole name or a name followed by a separator: "openaix" is nobody's.
    expect(credentialProviderOf('voice', 'openaix')).toBeNull();
  });
});

describe('withCredentials', () => {
  const agent = AgentConfigSchema.parse({
    agent_name: 'A',
    llm: { base_url: 'http://models.local/v1', model: 'm', api_key: 'inline-llm', credential: 'llm' },
    stt: { engine: 'openai', credential: 'stt' },
    voice: { engine: 'openai', base_url: 'http://voice.local/v1', api_key: 'inline-voice', credential: 'voice' },
  });

  it("puts each credential's key in its section over the section's own, its address over the section's, and OpenAI's own address where neither gives one; the agent given is left as it was", async () => {
    const before = structuredClone(agent);
    const resolved = await withCredentials(
      'acme',
      agent,
      lookupOf(
        'acme',
        credential('llm'),
        credential('stt'),
        credential('voice', { base_url: 'https://voice.example.com/v1' }),
      ),
    );
    expect(resolved.llm).toMatchObject({ api_key: 'key-llm', base_url: 'http://models.local/v1' });
    expect(resolved.stt).toMatchObject({ api_key: 'key-stt', base_url: 'https://api.openai.com/v1' });
    expect(resolved.voice).toMatchObject({ api_key: 'key-voice', base_url: 'https://voice.example.com/v1' });
    expect(agent).toEqual(before);
  });

  it('returns an agent that names no credential as it is', async () => {
    const plain = AgentConfigSchema.parse({ agent_name: 'P', llm: { base_url: 'http://m.local/v1', model: 'm' } });
    expect(await withCredentials('acme', plain, lookupOf('acme'))).toBe(plain);
  });

  it("is CREDENTIAL_NOT_FOUND for a name the call's organization does not have (another organization's included), CREDENTIAL_MISMATCH for one of another provider", async () => {
    const all = [credential('llm'), credential('stt'), credential('voice')];
    const missing = withCredentials('globex', agent, lookupOf('acme', ...all));
    await expect(missing).rejects.toBeInstanceOf(CredentialUnavailableError);
    await expect(missing).rejects.toMatchObject({ code: 'CREDENTIAL_NOT_FOUND' });
    const misfit = withCredentials(
      'acme',
      agent,
      lookupOf('acme', credential('llm'), credential('stt', { provider: 'deepgram' }), credential('voice')),
    );
    await expect(misfit).rejects.toMatchObject({
      code: 'CREDENTIAL_MISMATCH',
      message: 'stt.credential: "stt" is for deepgram; stt.engine openai takes only openai credentials',
    });
  });

  describe('in fallbacks', () => {
    const withFallbacks = AgentConfigSchema.parse({
      agent_name: 'F',
      llm: {
        base_url: 'http://m.local/v1',
        model: 'm',
        fallback: [{ base_url: 'http://m2.local/v1', model: 'm2', credential: 'backup-model' }],
      },
      voice: {
        engine: 'elevenlabs',
        credential: 'el',
        fallback: [{ engine: 'cartesia', credential: 'cart' }, { engine: 'flite' }],
      },
    });
    const all = [
      credential('backup-model'),
      credential('el', { provider: 'elevenlabs' }),
      credential('cart', { provider: 'cartesia', base_url: 'https://cartesia.example.com' }),
    ];

    it('fills each fallback entry from the credential it names, as its own section would be, and leaves the agent given as it was', async () => {
      const before = structuredClone(withFallbacks);
      const resolved = await withCredentials('acme', withFallbacks, lookupOf('acme', ...all));
      expect(resolved.voice).toMatchObject({ engine: 'elevenlabs', api_key: 'key-el' });
      expect(resolved.voice.fallback).toEqual([
        expect.objectContaining({ engine: 'cartesia', api_key: 'key-cart', base_url: 'wss://cartesia.example.com' }),
        expect.objectContaining({ engine: 'flite' }),
      ]);
      expect(resolved.voice.fallback![1]).not.toHaveProperty('api_key');
      expect(resolved.llm.api_key).toBeUndefined();
      expect(resolved.llm.fallback![0]).toMatchObject({ api_key: 'key-backup-model', base_url: 'http://m2.local/v1' });
      expect(withFallbacks).toEqual(before);
    });

    it("names the fallback entry's field when its credential is gone or of another provider, at save and at call start", async () => {
      const noCart = lookupOf('acme', all[0]!, all[1]!);
      await expect(withCredentials('acme', withFallbacks, noCart)).rejects.toMatchObject({
        code: 'CREDENTIAL_NOT_FOUND',
        message: expect.stringMatching(/^voice\.fallback\[0\]\.credential names the provider credential "cart"/),
      });
      const wrong = lookupOf('acme', all[0]!, all[1]!, credential('cart', { provider: 'deepgram' }));
      await expect(withCredentials('acme', withFallbacks, wrong)).rejects.toMatchObject({
        code: 'CREDENTIAL_MISMATCH',
        message:
          'voice.fallback[0].credential: "cart" is for deepgram; voice.fallback[0].engine cartesia takes only cartesia credentials',
      });
      await expect(checkCredentials('acme', withFallbacks, noCart)).rejects.toMatchObject({
        details: expect.stringContaining(
          'body.voice.fallback[0].credential: the organization has no provider credential named "cart"',
        ),
      });
    });
  });
});
