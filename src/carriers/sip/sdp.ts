// SDP offer/answer (RFC 4566 for the text, RFC 3264 for the exchange), for the one thing a phone
// call needs: one audio stream of RTP/AVP with G.722, PCMU or PCMA at 20 ms, plus telephone-event
// for keypad digits. Only the lines that decide that are read (o, c, m, a=rtpmap/fmtp/ptime and
// the direction); the rest are skipped. G.722 is written `G722/8000` though its audio is 16 kHz:
// the RTP profile keeps the clock rate its first version wrote (rtp-sender.ts says more).
//
// An answer keeps the offer's m-lines in order (RFC 3264 §6): the first audio stream this side
// can carry is answered with one codec and telephone-event if offered; every other stream gets
// port 0. The codec is G.722 whenever the offer has it, wherever it stands in the offer's order,
// and otherwise the first G.711 of the offer's order (the caller's preference). G.722 jumps the
// queue because wideband is the point of it: the recogniser reads 16 kHz speech better, and
// phones commonly list PCMU first only to suit narrowband networks, though both ends do G.722
// (the answerer may choose any offered codec, §6.1). The same rule reads an answer to this
// side's offer, which lists G.722 first.
import { isIPv6 } from 'node:net';
import { SipError } from './errors.ts';
import { RTP_CODECS, type RtpCodec } from './rtp-sender.ts';

/** An SDP body longer than this is refused (a phone's is well under 2 KiB). */
export const MAX_SDP_BYTES = 16 * 1024;
/** The payload type this side offers telephone-event on (any dynamic one works; 101 is the custom). */
export const TELEPHONE_EVENT_PAYLOAD_TYPE = 101;
const SUPPORTED = RTP_CODECS;

export type Direction = 'sendrecv' | 'sendonly' | 'recvonly' | 'inactive';

export interface RtpMap {
  encoding: string;
  clockRate: number;
  channels?: number | undefined;
}

export interface MediaDescription {
  media: string;
  port: number;
  protocol: string;
  /** The m-line's formats as written (payload type numbers for RTP). */
  formats: string[];
  /** The c= address of this stream, or the session's when it has none. */
  address: string | undefined;
  rtpmaps: Map<number, RtpMap>;
  fmtps: Map<number, string>;
  direction: Direction;
  ptime: number | undefined;
}

export interface SessionDescription {
  origin: { username: string; sessionId: string; sessionVersion: string; address: string };
  media: MediaDescription[];
}

/** Reads an SDP body; SIP_BAD_SDP when it is not SDP with at least one m-line. */
export function parseSdp(text: string): SessionDescription {
  if (text.length > MAX_SDP_BYTES) throw bad(`longer than ${MAX_SDP_BYTES} bytes`);
  const lines = text.split(/\r?\n/).filter((line) => line.length > 0);
  if (lines[0] !== 'v=0') throw bad('does not start with v=0');
  let origin: SessionDescription['origin'] | undefined;
  let sessionAddress: string | undefined;
  let sessionDirection: Direction = 'sendrecv';
  const media: MediaDescription[] = [];
  let current: MediaDescription | undefined;
  for (const line of lines) {
    if (line[1] !== '=') throw bad(`line is not type=value: ${JSON.stringify(line.slice(0, 40))}`);
    const type = line[0];
    const value = line.slice(2);
    if (type === 'o') {
      const parts = value.split(' ');
      if (parts.length !== 6 || parts[3] !== 'IN') throw bad('o= line is not six fields of IN');
      origin = { username: parts[0]!, sessionId: parts[1]!, sessionVersion: parts[2]!, address: parts[5]! };
    } else if (type === 'c') {
      const address = connectionAddress(value);
      if (current) current.address = address;
      else sessionAddress = address;
    } else if (type === 'm') {
      const parts = value.split(' ');
      const port = Number(parts[1]?.split('/')[0]);
      if (parts.length < 4 || !Number.isInteger(port) || port < 0 || port > 65535) throw bad('m= line is malformed');
      current = {
        media: parts[0]!,
        port,
        protocol: parts[2]!,
        formats: parts.slice(3),
        address: sessionAddress,
        rtpmaps: new Map(),
        fmtps: new Map(),
        direction: sessionDirection,
        ptime: undefined,
      };
      media.push(current);
    } else if (type === 'a') {
      const direction = asDirection(value);
      if (direction && current) current.direction = direction;
      else if (direction) sessionDirection = direction;
      else if (current) readAttribute(current, value);
    }
  }
  if (!origin) throw bad('has no o= line');
  if (media.length === 0) throw bad('has no m= line');
  return { origin, media };
}

function bad(why: string): SipError {
  return new SipError('SIP_BAD_SDP', `SDP ${why}`);
}

function connectionAddress(value: string): string {
  const parts = value.split(' ');
  if (parts.length !== 3 || parts[0] !== 'IN' || (parts[1] !== 'IP4' && parts[1] !== 'IP6'))
    throw bad('c= line is not IN IP4/IP6 address');
  // A multicast address carries a TTL and count after slashes; the address is before them.
  return parts[2]!.split('/')[0]!;
}

function asDirection(value: string): Direction | undefined {
  return value === 'sendrecv' || value === 'sendonly' || value === 'recvonly' || value === 'inactive'
    ? value
    : undefined;
}

function readAttribute(m: MediaDescription, value: string): void {
  const colon = value.indexOf(':');
  if (colon === -1) return;
  const name = value.slice(0, colon);
  const rest = value.slice(colon + 1);
  if (name === 'rtpmap') {
    const match = /^(\d{1,3}) ([^/\s]+)\/(\d+)(?:\/(\d+))?$/.exec(rest.trim());
    if (!match) return;
    m.rtpmaps.set(Number(match[1]), {
      encoding: match[2]!,
      clockRate: Number(match[3]),
      channels: match[4] === undefined ? undefined : Number(match[4]),
    });
  } else if (name === 'fmtp') {
    const match = /^(\d{1,3}) (.*)$/.exec(rest);
    if (match) m.fmtps.set(Number(match[1]), match[2]!);
  } else if (name === 'ptime') {
    const ptime = Number(rest);
    if (Number.isFinite(ptime) && ptime > 0) m.ptime = ptime;
  }
}

/** What both sides agreed for the call's audio stream. */
export interface NegotiatedMedia {
  codec: RtpCodec;
  /** The codec's payload type on this stream (its static one unless the offer mapped another). */
  payloadType: number;
  /** telephone-event's payload type, or undefined when the far side takes none. */
  telephoneEventType: number | undefined;
  /** Where the far side receives (and, symmetric, sends from). */
  remote: { address: string; port: number };
  /** What this side does: sendrecv normally, recvonly while the far side holds the call. */
  direction: Direction;
  /** The far side holds the call (sendonly, inactive, or the old c=0.0.0.0 form). */
  onHold: boolean;
}

/** This side's media for an offer or answer. */
export interface LocalMedia {
  /** The address written into o= and c= (SIP_PUBLIC_HOST). */
  address: string;
  /** The RTP port bound for this call. */
  port: number;
  /** o= session id and version: the version goes up by one with each new description of the session. */
  sessionId: string;
  sessionVersion: number;
  /** Codecs this side takes (a wideband one is preferred, see above); G.722, PCMU and PCMA when absent. */
  codecs?: readonly RtpCodec[] | undefined;
}

const ANSWER_DIRECTION: Record<Direction, Direction> = {
  sendrecv: 'sendrecv',
  sendonly: 'recvonly',
  recvonly: 'sendonly',
  inactive: 'inactive',
};

/**
 * The answer to an offer, and what it agreed. SIP_BAD_SDP for an unreadable offer;
 * SIP_NO_COMMON_CODEC when no audio stream offers G722, PCMU or PCMA over RTP/AVP (answered 488).
 */
export function answerOffer(offerText: string, local: LocalMedia): { answer: string; media: NegotiatedMedia } {
  const offer = parseSdp(offerText);
  const codecs = local.codecs ?? SUPPORTED;
  let chosen: { index: number; media: NegotiatedMedia } | undefined;
  for (const [index, m] of offer.media.entries()) {
    if (chosen || m.media !== 'audio' || m.protocol !== 'RTP/AVP' || m.port === 0 || !m.address) continue;
    const pick = pickCodec(m, codecs);
    if (!pick) continue;
    chosen = { index, media: negotiated(m, pick, telephoneEventOf(m), ANSWER_DIRECTION[m.direction]) };
  }
  if (!chosen)
    throw new SipError('SIP_NO_COMMON_CODEC', 'no audio stream of the offer carries G722, PCMU or PCMA over RTP/AVP');
  const lines = sessionLines(local);
  for (const [index, m] of offer.media.entries()) {
    if (index === chosen.index) lines.push(...audioLines(local.port, chosen.media));
    else lines.push(`m=${m.media} 0 ${m.protocol} ${m.formats.join(' ')}`);
  }
  return { answer: lines.join('\r\n') + '\r\n', media: chosen.media };
}

/** An offer of this side's codecs and telephone-event, for a call the service places. */
export function createOffer(local: LocalMedia): string {
  const codecs = local.codecs ?? SUPPORTED;
  const types = [...codecs.map((c) => c.payloadType), TELEPHONE_EVENT_PAYLOAD_TYPE];
  return [
    ...sessionLines(local),
    `m=audio ${local.port} RTP/AVP ${types.join(' ')}`,
    ...codecs.map((c) => `a=rtpmap:${c.payloadType} ${c.name}/${c.clockRate}`),
    `a=rtpmap:${TELEPHONE_EVENT_PAYLOAD_TYPE} telephone-event/8000`,
    `a=fmtp:${TELEPHONE_EVENT_PAYLOAD_TYPE} 0-16`,
    'a=ptime:20',
    'a=sendrecv',
  ]
    .join('\r\n')
    .concat('\r\n');
}

/**
 * What an answer to this side's offer agreed: the first audio stream with a port, and its G.722
 * or else its first codec that this side offered. SIP_NO_COMMON_CODEC when it accepted none.
 */
export function readAnswer(answerText: string, local: Pick<LocalMedia, 'codecs'> = {}): NegotiatedMedia {
  const answer = parseSdp(answerText);
  const codecs = local.codecs ?? SUPPORTED;
  for (const m of answer.media) {
    if (m.media !== 'audio' || m.port === 0 || !m.address) continue;
    const pick = pickCodec(m, codecs);
    if (pick) return negotiated(m, pick, telephoneEventOf(m), ANSWER_DIRECTION[m.direction]);
  }
  throw new SipError('SIP_NO_COMMON_CODEC', 'the answer accepted no audio codec this side offered');
}

function pickCodec(m: MediaDescription, codecs: readonly RtpCodec[]): { codec: RtpCodec; payloadType: number } | null {
  const carried: { codec: RtpCodec; payloadType: number }[] = [];
  for (const format of m.formats) {
    const type = Number(format);
    if (!Number.isInteger(type)) continue;
    const map = m.rtpmaps.get(type);
    const codec = map
      ? codecs.find((c) => c.name === map.encoding.toUpperCase() && c.clockRate === map.clockRate)
      : codecs.find((c) => c.payloadType === type);
    if (codec) carried.push({ codec, payloadType: type });
  }
  return carried.find((c) => c.codec.sampleRate > 8000) ?? carried[0] ?? null;
}

function telephoneEventOf(m: MediaDescription): number | undefined {
  for (const format of m.formats) {
    const map = m.rtpmaps.get(Number(format));
    if (map && map.encoding.toLowerCase() === 'telephone-event' && map.clockRate === 8000) return Number(format);
  }
  return undefined;
}

function negotiated(
  m: MediaDescription,
  pick: { codec: RtpCodec; payloadType: number },
  telephoneEventType: number | undefined,
  direction: Direction,
): NegotiatedMedia {
  const address = m.address!;
  const zeroAddress = address === '0.0.0.0' || address === '::';
  return {
    ...pick,
    telephoneEventType,
    remote: { address, port: m.port },
    direction: zeroAddress ? 'inactive' : direction,
    onHold: zeroAddress || m.direction === 'sendonly' || m.direction === 'inactive',
  };
}

function sessionLines(local: LocalMedia): string[] {
  const family = isIPv6(local.address) ? 'IP6' : 'IP4';
  return [
    'v=0',
    `o=- ${local.sessionId} ${local.sessionVersion} IN ${family} ${local.address}`,
    's=-',
    `c=IN ${family} ${local.address}`,
    't=0 0',
  ];
}

function audioLines(port: number, media: NegotiatedMedia): string[] {
  const types = [media.payloadType, ...(media.telephoneEventType === undefined ? [] : [media.telephoneEventType])];
  const lines = [
    `m=audio ${port} RTP/AVP ${types.join(' ')}`,
    `a=rtpmap:${media.payloadType} ${media.codec.name}/${media.codec.clockRate}`,
  ];
  if (media.telephoneEventType !== undefined)
    lines.push(`a=rtpmap:${media.telephoneEventType} telephone-event/8000`, `a=fmtp:${media.telephoneEventType} 0-16`);
  lines.push('a=ptime:20', `a=${media.direction}`);
  return lines;
}
