import { describe, expect, it } from 'vitest';
import {
  encodeLineFrame,
  lineEncoding,
  lineFrameBytes,
  LineAudioIn,
  type LineFormat,
} from '../../src/audio/line-format.ts';

const L16_16K_LE: LineFormat = { codec: 'l16le', rate: 16000 };
const L16_16K_BE: LineFormat = { codec: 'l16be', rate: 16000 };

function ramp(samples: number): Int16Array {
  const out = new Int16Array(samples);
  for (let i = 0; i < samples; i++) out[i] = (i * 397 - 30000) % 32768;
  return out;
}

describe('line formats', () => {
  it('a 20 ms frame is 160 bytes of G.711 at 8 kHz and 640 bytes of L16 at 16 kHz', () => {
    expect(lineFrameBytes({ codec: 'mulaw', rate: 8000 })).toBe(160);
    expect(lineFrameBytes({ codec: 'alaw', rate: 8000 })).toBe(160);
    expect(lineFrameBytes(L16_16K_LE)).toBe(640);
  });

  it('L16 frames go out in the byte order the line names', () => {
    const frame = Int16Array.from({ length: 320 }, (_, i) => (i === 0 ? 0x1234 : -2));
    const le = encodeLineFrame(L16_16K_LE, frame);
    const be = encodeLineFrame(L16_16K_BE, frame);
    expect([...le.subarray(0, 4)]).toEqual([0x34, 0x12, 0xfe, 0xff]);
    expect([...be.subarray(0, 4)]).toEqual([0x12, 0x34, 0xff, 0xfe]);
  });

  it.each([L16_16K_LE, L16_16K_BE])('%o comes back sample for sample, however the bytes are split', (format) => {
    const sent = ramp(320 * 3);
    const bytes = Buffer.concat([0, 1, 2].map((i) => encodeLineFrame(format, sent.subarray(i * 320, (i + 1) * 320))));
    const line = new LineAudioIn(format);
    // Cut at odd offsets: a sample's two bytes arrive in different payloads.
    const frames = [0, 1, 333, 640, 641, 1500, bytes.length].flatMap((end, i, ends) =>
      i === 0 ? [] : line.push(bytes.subarray(ends[i - 1], end)),
    );
    expect(frames.map((f) => f.length)).toEqual([320, 320, 320]);
    expect(Array.from(frames.flatMap((f) => Array.from(f)))).toEqual(Array.from(sent));
  });

  it('μ-law frames keep their 8 kHz and come back within the codec step', () => {
    const sent = Int16Array.from({ length: 160 }, (_, i) => Math.round(8000 * Math.sin(i / 5)));
    const [frame] = new LineAudioIn({ codec: 'mulaw', rate: 8000 }).push(
      encodeLineFrame({ codec: 'mulaw', rate: 8000 }, sent),
    );
    expect(frame).toHaveLength(160);
    for (let i = 0; i < 160; i++) expect(Math.abs(frame![i]! - sent[i]!)).toBeLessThan(300);
  });

  it("a recogniser reads the line's own bytes only when they are μ-law or little-endian L16", () => {
    expect(lineEncoding({ codec: 'mulaw', rate: 8000 })).toBe('mulaw');
    expect(lineEncoding(L16_16K_LE)).toBe('linear16');
    expect(lineEncoding(L16_16K_BE)).toBeUndefined();
    expect(lineEncoding({ codec: 'alaw', rate: 8000 })).toBeUndefined();
  });
});
