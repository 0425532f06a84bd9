// The audio formats a phone line's stream carries, and their translation to and from the 20 ms
// PCM16 frames of the pipeline at the line's own rate (nothing is resampled: a 16 kHz line gives
// the engines 16 kHz, an 8 kHz one 8 kHz). G.711 (μ-law, A-law) is the phone's narrowband; L16 is
// plain 16-bit PCM, which carriers offer at 16 kHz for wideband, little- or big-endian as each
// carrier says.
import { aLawEncode, muLawEncode } from './g711.ts';
import { Framer } from './framer.ts';
import type { MediaRate } from './pcm.ts';
import { CarrierAudioIn } from './telephony.ts';

export type LineCodec = 'mulaw' | 'alaw' | 'l16le' | 'l16be';

export interface LineFormat {
  readonly codec: LineCodec;
  readonly rate: MediaRate;
}

/** What every phone line speaks unless told otherwise. */
export const MULAW_8K: LineFormat = { codec: 'mulaw', rate: 8000 };

/** Bytes one 20 ms frame takes on the line. */
export function lineFrameBytes(format: LineFormat): number {
  const samples = format.rate / 50;
  return format.codec === 'l16le' || format.codec === 'l16be' ? samples * 2 : samples;
}

/** How the caller's audio came over the wire, as a recogniser that reads the line's bytes wants it. */
export function lineEncoding(format: LineFormat): 'mulaw' | 'linear16' | undefined {
  if (format.codec === 'mulaw') return 'mulaw';
  // Big-endian and A-law bytes are not what such a recogniser takes: it gets the decoded frames.
  return format.codec === 'l16le' ? 'linear16' : undefined;
}

/** A line's bytes in (any length, split anywhere), whole 20 ms frames at the line's rate out. */
export class LineAudioIn {
  private readonly g711: CarrierAudioIn | null;
  private readonly framer: Framer;
  /** The first byte of a sample split across two payloads. */
  private carry: number | null = null;

  constructor(private readonly format: LineFormat) {
    const g711 = format.codec === 'mulaw' || format.codec === 'alaw';
    this.g711 = g711
      ? new CarrierAudioIn({
          encoding: format.codec === 'alaw' ? 'alaw' : 'mulaw',
          carrierRate: format.rate,
          internalRate: format.rate,
        })
      : null;
    this.framer = Framer.forRate(format.rate);
  }

  push(bytes: Uint8Array): Int16Array[] {
    if (this.g711) return this.g711.push(bytes);
    const carried = this.carry === null ? 0 : 1;
    const samples = new Int16Array((bytes.length + carried) >> 1);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const little = this.format.codec === 'l16le';
    let at = 0;
    let i = 0;
    if (this.carry !== null && bytes.length > 0) {
      const [lo, hi] = little ? [this.carry, bytes[0]!] : [bytes[0]!, this.carry];
      samples[i++] = (((hi << 8) | lo) << 16) >> 16;
      at = 1;
      this.carry = null;
    }
    for (; at + 1 < bytes.length; at += 2) samples[i++] = view.getInt16(at, little);
    if (at < bytes.length) this.carry = bytes[at]!;
    return this.framer.push(samples.subarray(0, i));
  }
}

/** One frame of PCM16 at the line's rate onto the line: its bytes, in `out` when it is large enough. */
export function encodeLineFrame(format: LineFormat, frame: Int16Array, out?: Buffer): Buffer {
  const size = format.codec === 'l16le' || format.codec === 'l16be' ? frame.length * 2 : frame.length;
  const bytes = out && out.length >= size ? out.subarray(0, size) : Buffer.alloc(size);
  if (format.codec === 'mulaw') muLawEncode(frame, bytes);
  else if (format.codec === 'alaw') aLawEncode(frame, bytes);
  else if (format.codec === 'l16le') for (let i = 0; i < frame.length; i++) bytes.writeInt16LE(frame[i]!, i * 2);
  else for (let i = 0; i < frame.length; i++) bytes.writeInt16BE(frame[i]!, i * 2);
  return bytes;
}
