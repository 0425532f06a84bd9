// The message examples of Cartesia's WebSocket reference, as printed there, read by our schemas and wire.
import { describe, expect, it } from 'vitest';
import { CartesiaMessageSchema, CartesiaWire } from '../../../../src/speech/tts/cartesia/engine.ts';
import { CartesiaCancelSchema, CartesiaRequestSchema } from './stand-in.ts';

const documented = {
  request: {
    model_id: 'sonic-3.5',
    transcript: "Hello, world! I'm generating audio on Cartesia!",
    voice: { mode: 'id', id: 'a0e99841-438c-4a64-b679-ae501e7d6091' },
    language: 'en',
    context_id: 'ab977222-f9e0-4563-a1c0-5a934ae8fdd6',
    output_format: { container: 'raw', encoding: 'pcm_s16le', sample_rate: 8000 },
    add_timestamps: true,
    continue: false,
  },
  cancel: { context_id: '50dc3b5e-5841-4aa1-9f94-60cfb9aead79', cancel: true },
  chunk: {
    type: 'chunk',
    data: 'aSDinaTvuI8gbWludGxpZnk=',
    done: false,
    status_code: 206,
    step_time: 123,
    context_id: '50dc3b5e-5841-4aa1-9f94-60cfb9aead79',
  },
  flushDone: {
    type: 'flush_done',
    done: false,
    flush_done: true,
    flush_id: 1,
    status_code: 206,
    context_id: '50dc3b5e-5841-4aa1-9f94-60cfb9aead79',
  },
  done: { type: 'done', done: true, status_code: 206, context_id: '50dc3b5e-5841-4aa1-9f94-60cfb9aead79' },
  timestamps: {
    type: 'timestamps',
    done: false,
    status_code: 206,
    context_id: '872ec12d-bc63-4e1e-a241-4f58c879d105',
    word_timestamps: { words: ['Hello', 'world'], start: [0, 0.5], end: [0.4, 0.9] },
  },
  phonemes: {
    type: 'phoneme_timestamps',
    done: false,
    status_code: 206,
    context_id: '872ec12d-bc63-4e1e-a241-4f58c879d105',
    phoneme_timestamps: {
      phonemes: ['h', 'ə', 'l', 'oʊ'],
      start: [0.093, 0.174, 0.255, 0.337],
      end: [0.174, 0.255, 0.337, 0.418],
    },
  },
  error: {
    type: 'error',
    done: true,
    title: 'Invalid model',
    message: 'The model is not valid, make sure it is a valid model ID.',
    error_code: 'model_not_found',
    status_code: 400,
    context_id: '50dc3b5e-5841-4aa1-9f94-60cfb9aead79',
  },
};

const read = (message: object) =>
  new CartesiaWire({ apiKey: 'k' }, 8000).read(Buffer.from(JSON.stringify(message)), false);

describe('Cartesia’s documented messages', () => {
  it('its request and cancel examples are what the stand-in takes', () => {
    expect(CartesiaRequestSchema.safeParse(documented.request).success).toBe(true);
    expect(CartesiaCancelSchema.safeParse(documented.cancel).success).toBe(true);
  });

  it('every server example parses', () => {
    for (const message of Object.values(documented).slice(2))
      expect(CartesiaMessageSchema.safeParse(message).success).toBe(true);
  });

  it('reads a chunk as audio, timestamps as words, done as the end, an error by its code, and passes over the rest', () => {
    const context = '50dc3b5e-5841-4aa1-9f94-60cfb9aead79';
    expect(read(documented.chunk)).toEqual([
      { type: 'audio', context, bytes: Buffer.from(documented.chunk.data, 'base64') },
    ]);
    expect(read(documented.timestamps)).toEqual([
      {
        type: 'words',
        context: '872ec12d-bc63-4e1e-a241-4f58c879d105',
        words: [
          { word: 'Hello', start: 0, end: 0.4 },
          { word: 'world', start: 0.5, end: 0.9 },
        ],
      },
    ]);
    expect(read(documented.done)).toEqual([{ type: 'done', context }]);
    expect(read(documented.flushDone)).toEqual([]);
    expect(read(documented.phonemes)).toEqual([]);
    const [error] = read(documented.error);
    expect(error?.type === 'error' && error.error.message).toBe('cartesia reported error model_not_found (status 400)');
  });
});
