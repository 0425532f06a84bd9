// Ogg Opus files (RFC 7845 in Ogg pages, RFC 3533). prism-media 1.x reads Ogg but does not write
// it, and its 2.0 alpha counts granule positions at the input rate where RFC 7845 wants 48 kHz,
// so the pages are written here: a page header, a lacing table and a CRC.
import { Transform, type TransformCallback } from 'node:stream';
import { AudioError } from '../errors.ts';

/** Ogg Opus counts every position in 48 kHz samples, whatever rate the audio was encoded at. */
const GRANULE_RATE = 48000;
/** libopus's encoder delay at every rate (2.5 ms lookahead + 4 ms delay compensation), in 48 kHz samples. */
export const OPUS_PRE_SKIP = 312;
/** Packets per page: one second of 20 ms packets, as opusenc does (a seek lands within a second). */
const PACKETS_PER_PAGE = 50;
const MAX_SEGMENTS = 255;

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let bit = 0; bit < 8; bit++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    table[i] = r >>> 0;
  }
  return table;
})();

/** Ogg's CRC-32: polynomial 0x04C11DB7, not reflected, initial value 0, no final xor. */
export function oggCrc(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ byte) & 0xff]!) >>> 0;
  return crc;
}

/** A packet's length in 48 kHz samples, from its TOC byte (RFC 6716 §3.1). */
export function opusPacketSamples(packet: Uint8Array): number {
  if (packet.length === 0) throw new AudioError('AUDIO_BAD_OPUS_PACKET', 'an empty Opus packet');
  const toc = packet[0]!;
  const config = toc >> 3;
  // SILK-only 10/20/40/60 ms, hybrid 10/20 ms, CELT-only 2.5/5/10/20 ms.
  const frame =
    config < 12
      ? [480, 960, 1920, 2880][config & 3]!
      : config < 16
        ? [480, 960][config & 1]!
        : [120, 240, 480, 960][config & 3]!;
  const code = toc & 3;
  if (code === 0) return frame;
  if (code !== 3) return frame * 2;
  if (packet.length < 2)
    throw new AudioError('AUDIO_BAD_OPUS_PACKET', 'an Opus packet of code 3 without its frame count');
  return frame * (packet[1]! & 0x3f);
}

export interface OggOpusOptions {
  channels: 1 | 2;
  /** The rate the audio was encoded from (informational in the head: players decode at 48 kHz). */
  inputRate: number;
  /** Samples at the input rate the file holds: the last page's position trims the padding of the last frame. */
  inputSamples?: number;
  /** The logical stream's serial number. */
  serial?: number;
  vendor?: string;
}

/** Opus packets (object mode) in, an Ogg Opus file's bytes out, a page per second of audio. */
export class OggOpusMuxer extends Transform {
  private sequence = 0;
  /** 48 kHz samples a decoder has put out by the end of the packets so far, pre-skip included (RFC 7845 §4). */
  private granule = 0;
  private pending: Buffer[] = [];
  private readonly serial: number;

  constructor(private readonly options: OggOpusOptions) {
    super({ writableObjectMode: true });
    this.serial = options.serial ?? 0x766f6963;
    const head = Buffer.alloc(19);
    head.write('OpusHead', 0, 'ascii');
    head.writeUInt8(1, 8);
    head.writeUInt8(options.channels, 9);
    head.writeUInt16LE(OPUS_PRE_SKIP, 10);
    head.writeUInt32LE(options.inputRate, 12);
    head.writeInt16LE(0, 16);
    head.writeUInt8(0, 18);
    const vendor = Buffer.from(options.vendor ?? 'voicecall-runtime (libopus)', 'utf8');
    const tags = Buffer.alloc(8 + 4 + vendor.length + 4);
    tags.write('OpusTags', 0, 'ascii');
    tags.writeUInt32LE(vendor.length, 8);
    vendor.copy(tags, 12);
    tags.writeUInt32LE(0, 12 + vendor.length);
    // RFC 7845: the head alone on the first page (beginning of stream), the tags on the next, both at position 0.
    this.push(this.page([head], 0, 0x02));
    this.push(this.page([tags], 0, 0));
  }

  override _transform(packet: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    try {
      this.granule += opusPacketSamples(packet);
    } catch (error) {
      done(error as Error);
      return;
    }
    this.pending.push(packet);
    const segments = this.pending.reduce((n, p) => n + Math.floor(p.length / 255) + 1, 0);
    if (this.pending.length >= PACKETS_PER_PAGE || segments > MAX_SEGMENTS - 8) this.flushPage(0);
    done();
  }

  override _flush(done: TransformCallback): void {
    const audio = this.options.inputSamples;
    // The last page's position is where the audio ends (after the decoder's pre-skip): the zeros
    // that padded the last frame are cut.
    if (audio !== undefined)
      this.granule = Math.min(
        this.granule,
        OPUS_PRE_SKIP + Math.round((audio * GRANULE_RATE) / this.options.inputRate),
      );
    this.flushPage(0x04);
    done();
  }

  private flushPage(flags: number): void {
    this.push(this.page(this.pending, this.granule, flags));
    this.pending = [];
  }

  private page(packets: Buffer[], granule: number, flags: number): Buffer {
    const lacing: number[] = [];
    for (const packet of packets) {
      for (let left = packet.length; ; left -= 255) {
        lacing.push(Math.min(left, 255));
        if (left < 255) break;
      }
    }
    const header = Buffer.alloc(27 + lacing.length);
    header.write('OggS', 0, 'ascii');
    header.writeUInt8(0, 4);
    header.writeUInt8(flags, 5);
    header.writeBigUInt64LE(BigInt(granule), 6);
    header.writeUInt32LE(this.serial, 14);
    header.writeUInt32LE(this.sequence++, 18);
    header.writeUInt8(lacing.length, 26);
    Buffer.from(lacing).copy(header, 27);
    const page = Buffer.concat([header, ...packets]);
    page.writeUInt32LE(oggCrc(page), 22);
    return page;
  }
}
