import { describe, expect, it } from 'vitest';
import { DeepgramTtsEngine, DeepgramWire } from '../../../../src/speech/tts/deepgram/engine.ts';
import { openLocal, streamingVoiceRules } from '../stand-ins/session-cases.ts';
import { DeepgramClientMessageSchema, startDeepgramStandIn } from './stand-in.ts';

streamingVoiceRules({
  provider: 'deepgram',
  timesWords: false,
  start: (key) => startDeepgramStandIn(key),
  engine: (baseUrl, apiKey) => new DeepgramTtsEngine({ apiKey, baseUrl, openWebSocket: openLocal }),
});

describe('Deepgram wire', () => {
  it('asks for mulaw at 8 kHz and linear16 at 16 kHz, with the key as "Token"', () => {
    const phone = new URL(new DeepgramWire({ apiKey: 'k' }, 8000).url);
    expect(phone.pathname).toBe('/v1/speak');
    expect(Object.fromEntries(phone.searchParams)).toEqual({
      model: 'aura-2-thalia-en',
      encoding: 'mulaw',
      sample_rate: '8000',
    });
    const browser = new DeepgramWire({ apiKey: 'k', model: 'aura-2-orion-en' }, 16000);
    expect(new URL(browser.url).searchParams.get('encoding')).toBe('linear16');
    expect(browser.headers).toEqual({ Authorization: 'Token k' });
  });

  it('sends only the documented messages: Speak per piece, one Flush per utterance, Clear to cut', () => {
    const wire = new DeepgramWire({ apiKey: 'k' }, 8000);
    const sent = [...wire.text('u1', 'Hello'), ...wire.end('u1'), ...wire.cancel('u2'), ...wire.closing()];
    expect(sent.map((m) => DeepgramClientMessageSchema.parse(JSON.parse(m)))).toEqual([
      { type: 'Speak', text: 'Hello ' },
      { type: 'Flush' },
      { type: 'Clear' },
      { type: 'Close' },
    ]);
  });

  it("drops audio between a Clear and its Cleared (the cut utterance's), and ends an utterance at its Flushed", () => {
    const wire = new DeepgramWire({ apiKey: 'k' }, 8000);
    wire.text('u1', 'one');
    wire.cancel('u1');
    expect(wire.read(Buffer.from([1, 2, 3]), true)).toEqual([]);
    expect(wire.read(Buffer.from('{"type":"Cleared","sequence_id":0}'), false)).toEqual([]);
    wire.end('u2');
    expect(wire.read(Buffer.from([1, 2]), true)).toEqual([
      { type: 'audio', context: null, bytes: Buffer.from([1, 2]) },
    ]);
    expect(wire.read(Buffer.from('{"type":"Flushed","sequence_id":1}'), false)).toEqual([
      { type: 'done', context: 'u2' },
    ]);
  });
});
