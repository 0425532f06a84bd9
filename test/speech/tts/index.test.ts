import { describe, expect, it } from 'vitest';
import { VoiceConfigSchema } from '../../../src/agents/schema.ts';
import { createTtsEngine } from '../../../src/speech/tts/index.ts';
import { testDispatcher } from '../../support/outbound.ts';

describe('createTtsEngine', () => {
  it('picks the engine by name from the agent voice config, flite by default', async () => {
    for (const [config, name] of [
      [{}, 'flite'],
      [{ engine: 'espeak' }, 'espeak'],
      [{ engine: 'openai', base_url: 'http://127.0.0.1:9/v1', api_key: 'k' }, 'openai'],
    ] as const) {
      const engine = createTtsEngine(VoiceConfigSchema.parse(config), { dispatcher: testDispatcher });
      expect(engine.name).toBe(name);
      await engine.close();
    }
  });

  it('rejects the openai engine without base_url with TTS_CONFIG_INVALID', () => {
    expect(() =>
      createTtsEngine(VoiceConfigSchema.parse({ engine: 'openai' }), { dispatcher: testDispatcher }),
    ).toThrow(expect.objectContaining({ code: 'TTS_CONFIG_INVALID' }) as Error);
  });

  it('rejects an unknown flite voice with TTS_VOICE_UNKNOWN', () => {
    expect(() =>
      createTtsEngine(VoiceConfigSchema.parse({ voice_id: 'nobody' }), { dispatcher: testDispatcher }),
    ).toThrow(expect.objectContaining({ code: 'TTS_VOICE_UNKNOWN' }) as Error);
  });
});
