// Telnyx media streaming messages (docs/carriers/telnyx.md), validated as they arrive: a malformed
// frame is dropped with a log line and never reaches the session. The shapes relied on, as Telnyx
// documents them for a <Stream bidirectionalMode="rtp"> (base64 RTP payloads without headers):
//
//   in   {"event":"connected","version":"1.0.0"}
//        {"event":"start","sequence_number":"1","stream_id":"32DE0DEA-…",
//         "start":{"user_id":"…","call_control_id":"v3:…","client_state":"…",
//                  "media_format":{"encoding":"PCMU","sample_rate":8000,"channels":1},
//                  "custom_parameters":{"call_id":"…","secret":"…"}}}
//        {"event":"media","sequence_number":"4","stream_id":"…",
//         "media":{"track":"inbound","chunk":"2","timestamp":"5","payload":"<base64>"}}
//        {"event":"dtmf","sequence_number":"5","stream_id":"…","occurred_at":"…","dtmf":{"digit":"1"}}
//        {"event":"mark","sequence_number":"6","stream_id":"…","mark":{"name":"…"}}
//        {"event":"error","sequence_number":"7","stream_id":"…","payload":{"code":100002,"title":"…","detail":"…"}}
//        {"event":"stop","sequence_number":"8","stream_id":"…","stop":{"user_id":"…","call_control_id":"…"}}
//   out  {"event":"media","media":{"payload":"<base64>"}}   (20 ms to 30 s of audio each)
//        {"event":"mark","mark":{"name":"…"}}              (echoed once the audio before it played)
//        {"event":"clear"}                                  (drops queued audio)
//
// Telnyx does not promise media frames in order ("use media.chunk, media.timestamp and
// sequence_number to order frames"): MediaReorder puts them back in chunk order.
//
// The start's media_format is what the stream carries: the codec the <Stream> asked for, or "when
// set to 'default' or when transcoding is not possible, the codec from the call" (transcoding is
// "only supported between PCMU and PCMA"), so a G.722 leg streams G.722 whatever was asked. The
// encodings read (telnyxLineFormat): PCMU and PCMA at 8 kHz, G722 (16 kHz audio; RTP names its
// clock 8000, so either rate announced is 16 kHz), L16 at 8 or 16 kHz (RTP's L16, big-endian).
// OPUS and AMR-WB, which Telnyx also streams, are not decoded here.
import { z } from 'zod';
import { MULAW_8K, type LineFormat } from '../../audio/line-format.ts';

const Digits = z.string().regex(/^\d+$/);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export const TelnyxConnected = z.looseObject({ event: z.literal('connected') });

export const TelnyxStart = z.looseObject({
  event: z.literal('start'),
  sequence_number: Digits.optional(),
  stream_id: z.string().min(1),
  start: z.looseObject({
    user_id: z.string().optional(),
    call_control_id: z.string().min(1),
    client_state: z.string().nullable().optional(),
    media_format: z
      .looseObject({ encoding: z.string(), sample_rate: z.number(), channels: z.number().optional() })
      .optional(),
    custom_parameters: z.record(z.string(), z.string()).default({}),
  }),
});
export type TelnyxStart = z.infer<typeof TelnyxStart>;

export const TelnyxMedia = z.looseObject({
  event: z.literal('media'),
  sequence_number: Digits.optional(),
  media: z.looseObject({
    track: z.string().optional(),
    chunk: Digits.optional(),
    timestamp: z.string().optional(),
    payload: z.string().regex(BASE64, 'base64'),
  }),
});
export type TelnyxMedia = z.infer<typeof TelnyxMedia>;

export const TelnyxMark = z.looseObject({ event: z.literal('mark'), mark: z.looseObject({ name: z.string() }) });
export const TelnyxDtmf = z.looseObject({
  event: z.literal('dtmf'),
  dtmf: z.looseObject({ digit: z.string().min(1).max(1) }),
});
export const TelnyxError = z.looseObject({
  event: z.literal('error'),
  payload: z.looseObject({ code: z.number().optional(), title: z.string().optional(), detail: z.string().optional() }),
});
export const TelnyxStop = z.looseObject({ event: z.literal('stop') });

export const TelnyxInbound = z.discriminatedUnion('event', [
  TelnyxConnected,
  TelnyxStart,
  TelnyxMedia,
  TelnyxMark,
  TelnyxDtmf,
  TelnyxError,
  TelnyxStop,
]);
export type TelnyxInbound = z.infer<typeof TelnyxInbound>;

/**
 * The line format a start's media_format announces: μ-law 8 kHz when it names none (as Telnyx's first streams did);
 * undefined for one the service does not decode.
 */
export function telnyxLineFormat(start: TelnyxStart): LineFormat | undefined {
  const format = start.start.media_format;
  if (!format) return MULAW_8K;
  if (format.channels !== undefined && format.channels !== 1) return undefined;
  const rate = format.sample_rate;
  switch (format.encoding.toUpperCase()) {
    case 'PCMU':
      return rate === 8000 ? MULAW_8K : undefined;
    case 'PCMA':
      return rate === 8000 ? { codec: 'alaw', rate: 8000 } : undefined;
    case 'G722':
      return rate === 8000 || rate === 16000 ? { codec: 'g722', rate: 16000 } : undefined;
    case 'L16':
      return rate === 8000 || rate === 16000 ? { codec: 'l16be', rate } : undefined;
    default:
      return undefined;
  }
}

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const optionalDigits = (x: unknown): x is string | undefined =>
  x === undefined || (typeof x === 'string' && /^\d+$/.test(x));

/**
 * TelnyxMedia's rules checked by hand: media arrives 50 times a second per call, and this costs a fraction of the
 * schema's parse. Null for anything else (the schema then decides, and says why it refused).
 */
function asMedia(json: unknown): TelnyxMedia | null {
  if (!isRecord(json) || json.event !== 'media' || !isRecord(json.media)) return null;
  const { track, chunk, timestamp, payload } = json.media;
  if (
    typeof payload !== 'string' ||
    !BASE64.test(payload) ||
    !optionalDigits(chunk) ||
    !optionalDigits(json.sequence_number) ||
    (track !== undefined && typeof track !== 'string') ||
    (timestamp !== undefined && typeof timestamp !== 'string')
  )
    return null;
  return json as TelnyxMedia;
}

/** Parses one text frame; a reason string when it is not a message we understand. */
export function parseTelnyxMessage(text: string): { ok: true; message: TelnyxInbound } | { ok: false; reason: string } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  const media = asMedia(json);
  if (media) return { ok: true, message: media };
  const parsed = TelnyxInbound.safeParse(json);
  if (!parsed.success)
    return { ok: false, reason: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
  return { ok: true, message: parsed.data };
}

/** Base64 needs no escaping: prefix + payload + suffix is the JSON. */
export const TELNYX_MEDIA_PREFIX = '{"event":"media","media":{"payload":"';
export const TELNYX_MEDIA_SUFFIX = '"}}';
export const telnyxMedia = (payload: string) => TELNYX_MEDIA_PREFIX + payload + TELNYX_MEDIA_SUFFIX;
export const telnyxMark = (name: string) => JSON.stringify({ event: 'mark', mark: { name } });
export const TELNYX_CLEAR = '{"event":"clear"}';

/** The order a media frame belongs in: its chunk, else its sequence number; undefined when it has neither. */
export function mediaOrder(message: TelnyxMedia): number | undefined {
  const key = message.media.chunk ?? message.sequence_number;
  return key === undefined ? undefined : Number(key);
}

export const REORDER_DEFAULTS = {
  /** Frames held behind a missing one before it is given up as lost: 100 ms of audio at 20 ms frames. */
  maxHeld: 5,
} as const;

/**
 * Puts media payloads back in order. A frame that arrives ahead of the one expected is held until the gap fills, or
 * until `maxHeld` frames wait behind it (the missing one is then lost, and the held ones go out in order); a frame
 * that arrives after its place was given up is dropped, as a jitter buffer drops it. Frames without an order key go
 * out as they come.
 */
export class MediaReorder<T> {
  private expected: number | undefined;
  private readonly held = new Map<number, T>();
  /** Frames dropped for arriving after their place. */
  late = 0;

  constructor(
    private readonly deliver: (item: T) => void,
    private readonly maxHeld: number = REORDER_DEFAULTS.maxHeld,
  ) {}

  push(order: number | undefined, item: T): void {
    if (order === undefined || !Number.isSafeInteger(order)) return this.deliver(item);
    this.expected ??= order;
    if (order < this.expected || this.held.has(order)) {
      this.late++;
      return;
    }
    this.held.set(order, item);
    this.drain();
    while (this.held.size > this.maxHeld) {
      // The frame expected is lost: go on from the earliest one held.
      this.expected = Math.min(...this.held.keys());
      this.drain();
    }
  }

  private drain(): void {
    for (let next = this.held.get(this.expected!); next !== undefined; next = this.held.get(this.expected!)) {
      this.held.delete(this.expected!);
      this.expected! += 1;
      this.deliver(next);
    }
  }
}
