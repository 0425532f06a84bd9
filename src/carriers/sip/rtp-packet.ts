// RTP packets (RFC 3550 §5.1): the 12-byte fixed header, CSRC list, header extension and padding.
// Read without copying (the payload is a view into the datagram); written into one new buffer per
// packet, because the UDP socket may still hold the previous one when the next frame is built.
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// |V=2|P|X|  CC   |M|     PT      |       sequence number         |
// |                           timestamp                           |
// |           synchronization source (SSRC) identifier            |

export const RTP_HEADER_BYTES = 12;

export interface RtpHeader {
  payloadType: number;
  marker: boolean;
  /** 16 bits, wrapping. */
  sequence: number;
  /** 32 bits, wrapping, in the payload's clock (8000 Hz for G.711 and telephone-event). */
  timestamp: number;
  ssrc: number;
}

export interface RtpPacket extends RtpHeader {
  /** A view into the datagram it was read from. */
  payload: Uint8Array;
}

/**
 * The packet in `datagram`, or null for anything that is not RTP version 2 with a consistent
 * length (a stray datagram, an RTCP packet on the RTP port). Never throws: the datagram is the
 * far side's.
 */
export function parseRtp(datagram: Uint8Array): RtpPacket | null {
  if (datagram.length < RTP_HEADER_BYTES) return null;
  const first = datagram[0]!;
  if (first >> 6 !== 2) return null;
  const second = datagram[1]!;
  const payloadType = second & 0x7f;
  // 72–76 with the marker are RTCP's packet types 200–204 (RFC 5761 §4): not media.
  if (payloadType >= 72 && payloadType <= 76) return null;
  let offset = RTP_HEADER_BYTES + 4 * (first & 0x0f);
  if ((first & 0x10) !== 0) {
    if (datagram.length < offset + 4) return null;
    offset += 4 + 4 * ((datagram[offset + 2]! << 8) | datagram[offset + 3]!);
  }
  let end = datagram.length;
  if ((first & 0x20) !== 0) {
    const padding = datagram[end - 1]!;
    if (padding === 0) return null;
    end -= padding;
  }
  if (end < offset) return null;
  return {
    payloadType,
    marker: (second & 0x80) !== 0,
    sequence: (datagram[2]! << 8) | datagram[3]!,
    timestamp: readUint32(datagram, 4),
    ssrc: readUint32(datagram, 8),
    payload: datagram.subarray(offset, end),
  };
}

/** One RTP packet with no CSRC, extension or padding. */
export function writeRtp(header: RtpHeader, payload: Uint8Array): Buffer {
  const packet = Buffer.allocUnsafe(RTP_HEADER_BYTES + payload.length);
  packet[0] = 0x80;
  packet[1] = (header.marker ? 0x80 : 0) | (header.payloadType & 0x7f);
  packet.writeUInt16BE(header.sequence & 0xffff, 2);
  packet.writeUInt32BE(header.timestamp >>> 0, 4);
  packet.writeUInt32BE(header.ssrc >>> 0, 8);
  packet.set(payload, RTP_HEADER_BYTES);
  return packet;
}

function readUint32(bytes: Uint8Array, at: number): number {
  return ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0;
}

/**
 * How far sequence number `b` is ahead of `a`, in −32768…32767 (RFC 3550 §A.1's modular
 * comparison): 1 for the next packet, negative for one that arrived late.
 */
export function sequenceDistance(a: number, b: number): number {
  return ((((b - a) & 0xffff) + 0x8000) & 0xffff) - 0x8000;
}
