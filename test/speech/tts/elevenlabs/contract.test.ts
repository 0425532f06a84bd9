// The message shapes of ElevenLabs' multi-context WebSocket reference, read by our schemas and wire.
import { describe, expect, it } from 'vitest';
import { ElevenLabsMessageSchema, ElevenLabsWire } from '../../../../src/speech/tts/elevenlabs/engine.ts';

const documented = {
  audio: {
    audio: 'Y3VyaW91cyBtaW5kcyB0aGluayBhbGlrZQ==',
    normalizedAlignment: {
      charStartTimesMs: [0, 3, 7, 9, 11],
      charDurationsMs: [3, 4, 2, 2, 3],
      chars: ['H', 'e', 'l', 'l', 'o'],
    },
    alignment: {
      charStartTimesMs: [0, 3, 7, 9, 11],
      charDurationsMs: [3, 4, 2, 2, 3],
      chars: ['H', 'e', 'l', 'l', 'o'],
    },
    contextId: 'conv_1',
  },
  audioWithoutAlignment: { audio: 'Y3VyaW91cw==', normalizedAlignment: null, alignment: null, contextId: 'conv_1' },
  final: { isFinal: true, contextId: 'conv_1' },
  error: {
    message: 'Maximum simultaneous contexts per WebSocket connection exceeded (5).',
    error: 'max_active_conversations',
    code: 1008,
  },
};

describe('ElevenLabs’ documented messages', () => {
  it('every server shape parses', () => {
    for (const message of Object.values(documented))
      expect(ElevenLabsMessageSchema.safeParse(message).success).toBe(true);
  });

  it('reads audio with its alignment as audio and words, the final message as the end, an error by its code only', () => {
    const wire = new ElevenLabsWire({ apiKey: 'k' }, 16000);
    wire.text('conv_1', 'Hello', true);
    const read = (message: object) => wire.read(Buffer.from(JSON.stringify(message)), false);
    expect(read(documented.audio).map((e) => e.type)).toEqual(['audio']);
    expect(read(documented.audioWithoutAlignment).map((e) => e.type)).toEqual(['audio']);
    const end = read(documented.final);
    // The word still open ("Hello", no space after it yet) is closed by the final message.
    expect(end).toEqual([
      { type: 'words', context: 'conv_1', words: [{ word: 'Hello', start: 0, end: 0.014 }] },
      { type: 'done', context: 'conv_1' },
    ]);
    const [error] = read(documented.error);
    expect(error?.type === 'error' && error.error.code).toBe('TTS_PROVIDER_ERROR');
    expect(error?.type === 'error' && error.error.message).toBe('elevenlabs reported error max_active_conversations');
  });
});
