import { describe, expect, it } from 'vitest';
import { ElevenLabsTtsEngine, ElevenLabsWire } from '../../../../src/speech/tts/elevenlabs/engine.ts';
import { openLocal, streamingVoiceRules } from '../stand-ins/session-cases.ts';
import { startElevenLabsStandIn } from './stand-in.ts';

streamingVoiceRules({
  provider: 'elevenlabs',
  timesWords: true,
  start: (key) => startElevenLabsStandIn(key),
  engine: (baseUrl, apiKey) => new ElevenLabsTtsEngine({ apiKey, baseUrl, openWebSocket: openLocal }),
});

describe('ElevenLabs wire', () => {
  it('asks for μ-law 8 kHz on a phone line and PCM16 16 kHz otherwise, with the key in xi-api-key, never in the URL', () => {
    const phone = new ElevenLabsWire({ apiKey: 'k' }, 8000);
    expect(new URL(phone.url).searchParams.get('output_format')).toBe('ulaw_8000');
    expect(phone.encoding).toBe('mulaw');
    const browser = new ElevenLabsWire({ apiKey: 'k', voiceId: 'v1', model: 'm1' }, 16000);
    const url = new URL(browser.url);
    expect(url.pathname).toBe('/v1/text-to-speech/v1/multi-stream-input');
    expect(url.searchParams.get('output_format')).toBe('pcm_16000');
    expect(url.searchParams.get('model_id')).toBe('m1');
    expect(browser.headers).toEqual({ 'xi-api-key': 'k' });
    expect(browser.url).not.toContain('k&');
  });
});
