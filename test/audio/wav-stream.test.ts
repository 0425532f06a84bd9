import { describe, expect, it } from 'vitest';
import { encodeWav } from '../../src/audio/wav.ts';
import { WavStreamReader } from '../../src/audio/wav-stream.ts';

describe('WAV stream reader', () => {
  it('gives the samples of a WAV fed one byte at a time, with the rate from its header', () => {
    const samples = Int16Array.of(1, -2, 300, -32768, 32767);
    const bytes = encodeWav({ samples, sampleRate: 22050 });
    const reader = new WavStreamReader();
    const out: number[] = [];
    for (const byte of bytes) out.push(...reader.push(Uint8Array.of(byte)));
    expect(out).toEqual(Array.from(samples));
    expect(reader.sampleRate).toBe(22050);
  });

  it('ignores placeholder sizes in the header of a stream (espeak-ng writes 0x7ffff000)', () => {
    const bytes = encodeWav({ samples: Int16Array.of(5, 6), sampleRate: 22050 });
    const view = new DataView(bytes.buffer, bytes.byteOffset);
    view.setUint32(4, 0x7ffff024, true);
    view.setUint32(40, 0x7ffff000, true);
    const reader = new WavStreamReader();
    expect(Array.from(reader.push(bytes))).toEqual([5, 6]);
    expect(Array.from(reader.push(Uint8Array.of(7, 0)))).toEqual([7]);
  });

  it('rejects a stream that is not PCM16 mono WAV with AUDIO_BAD_WAV', () => {
    expect(() => new WavStreamReader().push(new TextEncoder().encode('{"error":"nope"}'))).toThrow(
      expect.objectContaining({ code: 'AUDIO_BAD_WAV' }) as Error,
    );
    const mulaw = encodeWav({ samples: Int16Array.of(1, 2), sampleRate: 8000 }, 'mulaw');
    expect(() => new WavStreamReader().push(mulaw)).toThrow(
      expect.objectContaining({ code: 'AUDIO_BAD_WAV' }) as Error,
    );
  });
});
