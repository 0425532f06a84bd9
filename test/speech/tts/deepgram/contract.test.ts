// The message examples of Deepgram's TTS WebSocket pages, read by our schemas and wire.
import { describe, expect, it } from 'vitest';
import { DeepgramMessageSchema, DeepgramWire } from '../../../../src/speech/tts/deepgram/engine.ts';
import { DeepgramClientMessageSchema } from './stand-in.ts';

const documented = {
  flushed: { type: 'Flushed', sequence_id: 0 },
  cleared: { type: 'Cleared', sequence_id: 0 },
  metadata: {
    type: 'Metadata',
    request_id: '550e8400-e29b-41d4-a716-446655440000',
    model_name: 'aura-2-thalia-en',
    model_version: '2025-04-01',
    model_uuid: 'b3e47c20-9f81-4a2e-bd15-8d7c6e2a1f09',
  },
  warning: { type: 'Warning', description: 'flush limit reached', code: 'FLUSH_LIMIT' },
};

describe('Deepgram’s documented messages', () => {
  it('the client messages of its pages are what the stand-in takes', () => {
    for (const message of [{ type: 'Speak', text: 'Hello' }, { type: 'Flush' }, { type: 'Clear' }, { type: 'Close' }])
      expect(DeepgramClientMessageSchema.safeParse(message).success).toBe(true);
  });

  it('every server example parses, and only a Flushed the utterance waits for ends it', () => {
    for (const message of Object.values(documented))
      expect(DeepgramMessageSchema.safeParse(message).success).toBe(true);
    const wire = new DeepgramWire({ apiKey: 'k' }, 8000);
    const read = (message: object) => wire.read(Buffer.from(JSON.stringify(message)), false);
    expect(read(documented.metadata)).toEqual([]);
    expect(read(documented.warning)).toEqual([]);
    expect(read(documented.flushed)).toEqual([]);
    wire.end('u1');
    expect(read(documented.flushed)).toEqual([{ type: 'done', context: 'u1' }]);
  });
});
