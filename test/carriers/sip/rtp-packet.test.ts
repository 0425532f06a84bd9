import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRtp, sequenceDistance, writeRtp } from '../../../src/carriers/sip/rtp-packet.ts';
import { FUZZ_SEED, runs } from '../../helpers/fuzz.ts';

describe('RTP packets', () => {
  it('reads back every header field it writes, with the payload after the 12-byte header', () => {
    const payload = Uint8Array.of(1, 2, 3, 4);
    const packet = writeRtp(
      { payloadType: 8, marker: true, sequence: 65535, timestamp: 0xfffffff0, ssrc: 0xdeadbeef },
      payload,
    );
    expect(packet.length).toBe(16);
    expect(packet[0]).toBe(0x80);
    const read = parseRtp(packet)!;
    expect({ ...read, payload: [...read.payload] }).toEqual({
      payloadType: 8,
      marker: true,
      sequence: 65535,
      timestamp: 0xfffffff0,
      ssrc: 0xdeadbeef,
      payload: [1, 2, 3, 4],
    });
  });

  it('skips the CSRC list and the header extension, and strips padding', () => {
    const bytes = Buffer.from([
      0xb1,
      0x00,
      0x00,
      0x07,
      0,
      0,
      0,
      160,
      0,
      0,
      0,
      9, // V=2 P X CC=1, PT 0, seq 7
      0,
      0,
      0,
      1, // one CSRC
      0xbe,
      0xde,
      0x00,
      0x01,
      0xaa,
      0xbb,
      0xcc,
      0xdd, // extension of one word
      0x11,
      0x22, // payload
      0x00,
      0x02, // two bytes of padding, the last says how many
    ]);
    const packet = parseRtp(bytes);
    expect(packet?.sequence).toBe(7);
    expect([...packet!.payload]).toEqual([0x11, 0x22]);
  });

  it('refuses what is not RTP version 2: short datagrams, version 1, RTCP types, padding longer than the packet', () => {
    expect(parseRtp(Uint8Array.of(0x80, 0, 0))).toBeNull();
    expect(parseRtp(Buffer.from([0x40, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1]))).toBeNull();
    // RTCP receiver report (201) on the RTP port reads as marker + payload type 73.
    expect(parseRtp(Buffer.from([0x81, 201, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0]))).toBeNull();
    expect(parseRtp(Buffer.from([0xa0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 40]))).toBeNull();
    expect(parseRtp(Buffer.from([0x90, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9]))).toBeNull();
  });

  it('never throws on any datagram, and a payload it finds lies inside the datagram', () => {
    const datagram = fc.oneof(
      fc.uint8Array({ maxLength: 64 }),
      // Version 2 headers with every flag combination, so the CSRC/extension/padding paths are reached.
      fc
        .tuple(fc.integer({ min: 0x80, max: 0xbf }), fc.uint8Array({ minLength: 11, maxLength: 64 }))
        .map(([first, rest]) => Uint8Array.of(first, ...rest)),
    );
    fc.assert(
      fc.property(datagram, (bytes) => {
        const packet = parseRtp(bytes);
        if (packet) expect(packet.payload.byteOffset + packet.payload.length).toBeLessThanOrEqual(bytes.length);
      }),
      { seed: FUZZ_SEED, numRuns: runs(2000) },
    );
  });

  it('compares sequence numbers across the 16-bit wrap', () => {
    expect(sequenceDistance(65535, 0)).toBe(1);
    expect(sequenceDistance(0, 65535)).toBe(-1);
    expect(sequenceDistance(100, 103)).toBe(3);
    expect(sequenceDistance(10, 5)).toBe(-5);
  });
});
