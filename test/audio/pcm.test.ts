import { describe, expect, it } from 'vitest';
import {
  DBFS_FLOOR,
  applyGain,
  bytesToInt16,
  concatPcm,
  dbfs,
  floatToInt16,
  int16ToBuffer,
  int16ToFloat,
  mix,
  mixInto,
  rms,
  samplesPerFrame,
  silence,
} from '../../src/audio/pcm.ts';

describe('PCM16 helpers', () => {
  it('reads little-endian bytes as samples, also from an odd byte offset', () => {
    const bytes = Uint8Array.of(0xff, 0x01, 0x00, 0x00, 0x80);
    expect(Array.from(bytesToInt16(bytes.subarray(1)))).toEqual([1, -32768]);
    expect(Array.from(bytesToInt16(Buffer.from([0x34, 0x12])))).toEqual([0x1234]);
  });

  it('writes samples as little-endian bytes and reads them back', () => {
    const samples = Int16Array.of(-2, 0, 32767);
    const buffer = int16ToBuffer(samples);
    expect(Array.from(buffer)).toEqual([0xfe, 0xff, 0, 0, 0xff, 0x7f]);
    expect(Array.from(bytesToInt16(buffer))).toEqual([-2, 0, 32767]);
  });

  it('measures RMS and dBFS: a full-scale square wave is 0 dBFS, silence is the floor', () => {
    const square = Int16Array.from({ length: 100 }, (_, i) => (i % 2 ? 32767 : -32768));
    expect(rms(square)).toBeCloseTo(32767.5, 0);
    expect(dbfs(square)).toBeCloseTo(0, 2);
    expect(dbfs(new Int16Array(10))).toBe(DBFS_FLOOR);
    expect(dbfs(new Int16Array(10).fill(3277))).toBeCloseTo(-20, 1);
  });

  it('mixes with saturation instead of wrapping around', () => {
    expect(Array.from(mix(Int16Array.of(30000, -30000, 5), Int16Array.of(10000, -10000)))).toEqual([32767, -32768, 5]);
    expect(Array.from(mixInto(Int16Array.of(100, 100), Int16Array.of(100, 100), 0.5))).toEqual([150, 150]);
    expect(Array.from(applyGain(Int16Array.of(20000, -100), 2))).toEqual([32767, -200]);
  });

  it('makes silence of the asked duration and frame sizes of 20 ms', () => {
    expect(silence(20, 16000).length).toBe(320);
    expect(silence(20, 16000).every((s) => s === 0)).toBe(true);
    expect(samplesPerFrame(8000)).toBe(160);
    expect(samplesPerFrame(48000, 10)).toBe(480);
  });

  it('concatenates blocks and converts to and from float', () => {
    expect(Array.from(concatPcm([Int16Array.of(1), Int16Array.of(2, 3)]))).toEqual([1, 2, 3]);
    expect(Array.from(floatToInt16([0.5, -1, 2]))).toEqual([16384, -32768, 32767]);
    expect(int16ToFloat(Int16Array.of(-32768))[0]).toBe(-1);
  });
});
