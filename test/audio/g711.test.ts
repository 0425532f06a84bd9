import alawmulaw from 'alawmulaw';
import { describe, expect, it } from 'vitest';
import {
  aLawDecode,
  aLawDecodeSample,
  aLawEncode,
  aLawEncodeSample,
  muLawDecode,
  muLawDecodeSample,
  muLawEncode,
  muLawEncodeSample,
} from '../../src/audio/g711.ts';

const everySample = Int16Array.from({ length: 65536 }, (_, i) => i - 32768);
const nonNegative = Int16Array.from({ length: 32768 }, (_, i) => i);
const everyCode = Uint8Array.from({ length: 256 }, (_, i) => i);

describe('G.711 μ-law', () => {
  it('decodes the reference values of the standard', () => {
    expect(muLawDecodeSample(0xff)).toBe(0);
    expect(muLawDecodeSample(0x7f)).toBe(0);
    expect(muLawDecodeSample(0x80)).toBe(32124);
    expect(muLawDecodeSample(0x00)).toBe(-32124);
    expect(muLawDecodeSample(0xfe)).toBe(8);
    expect(muLawDecodeSample(0xef)).toBe(132);
  });

  it('encodes the reference values of the standard (G.191, one’s complement for negatives)', () => {
    expect(muLawEncodeSample(0)).toBe(0xff);
    expect(muLawEncodeSample(-1)).toBe(0x7f);
    expect(muLawEncodeSample(32767)).toBe(0x80);
    expect(muLawEncodeSample(-32768)).toBe(0x00);
    expect(muLawEncodeSample(8159 * 4)).toBe(0x80);
  });

  it('re-encodes every decoded code to itself (0x7f, negative zero, becomes 0xff)', () => {
    const again = muLawEncode(muLawDecode(everyCode));
    for (let code = 0; code < 256; code++) expect(again[code]).toBe(code === 0x7f ? 0xff : code);
  });

  it('round-trips every sample below clipping within half a step of its segment (≤ |x|/32 + 4)', () => {
    const back = muLawDecode(muLawEncode(everySample));
    let worst = 0;
    for (let i = 0; i < everySample.length; i++) {
      const s = everySample[i]!;
      if (Math.abs(s) > 32000) continue;
      worst = Math.max(worst, Math.abs(back[i]! - s) - (Math.abs(s) + 132) / 32);
    }
    expect(worst).toBeLessThanOrEqual(4);
  });

  it('matches the alawmulaw package on every code, and on encoding every non-negative sample', () => {
    expect(Array.from(muLawDecode(everyCode))).toEqual(Array.from(alawmulaw.mulaw.decode(everyCode)));
    expect(Array.from(muLawEncode(nonNegative))).toEqual(Array.from(alawmulaw.mulaw.encode(nonNegative)));
  });

  it('writes into a caller buffer without allocating a new one', () => {
    const out = new Uint8Array(4);
    expect(muLawEncode(Int16Array.of(0, 0, 0, 0), out)).toBe(out);
  });
});

describe('G.711 A-law', () => {
  it('decodes the reference values of the standard', () => {
    expect(aLawDecodeSample(0xd5)).toBe(8);
    expect(aLawDecodeSample(0x55)).toBe(-8);
    expect(aLawDecodeSample(0xaa)).toBe(32256);
    expect(aLawDecodeSample(0x2a)).toBe(-32256);
  });

  it('encodes the reference values of the standard', () => {
    expect(aLawEncodeSample(0)).toBe(0xd5);
    expect(aLawEncodeSample(-1)).toBe(0x55);
    expect(aLawEncodeSample(32767)).toBe(0xaa);
    expect(aLawEncodeSample(-32768)).toBe(0x2a);
  });

  it('re-encodes every decoded code to itself', () => {
    expect(Array.from(aLawEncode(aLawDecode(everyCode)))).toEqual(Array.from(everyCode));
  });

  it('round-trips every sample within half a step of its segment (≤ |x|/32 + 8)', () => {
    const back = aLawDecode(aLawEncode(everySample));
    let worst = 0;
    for (let i = 0; i < everySample.length; i++) {
      const s = everySample[i]!;
      worst = Math.max(worst, Math.abs(back[i]! - s) - Math.abs(s) / 32);
    }
    expect(worst).toBeLessThanOrEqual(8);
  });

  // alawmulaw negates negative samples (sign-magnitude); G.191 takes the one's complement, so
  // the two differ by one step at some negative segment edges. Only non-negative inputs agree.
  it('matches the alawmulaw package on every code, and on encoding every non-negative sample', () => {
    expect(Array.from(aLawDecode(everyCode))).toEqual(Array.from(alawmulaw.alaw.decode(everyCode)));
    expect(Array.from(aLawEncode(nonNegative))).toEqual(Array.from(alawmulaw.alaw.encode(nonNegative)));
  });
});
