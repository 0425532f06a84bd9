// Plivo audio streaming messages (docs/carriers/plivo.md), validated as they arrive: a malformed
// one is dropped with a log line and never reaches the session. The shapes relied on, as Plivo
// documents them for a bidirectional <Stream>:
//
//   in   {"event":"start","sequenceNumber":1,"start":{"callId":"<uuid>","streamId":"<uuid>",
//         "accountId":"MA…","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-l16","sampleRate":16000}},
//         "extra_headers":"…"}
//        {"event":"media","sequenceNumber":42,"streamId":"…","media":{"track":"inbound",
//         "timestamp":"1705312200000","chunk":41,"payload":"<base64>"},"extra_headers":"…"}
//        {"event":"dtmf","sequenceNumber":7,"streamId":"…","dtmf":{"track":"inbound","digit":"5"}}
//        {"event":"playedStream","sequenceNumber":9,"streamId":"…","name":"<checkpoint>"}
//        {"event":"clearedAudio","sequenceNumber":10,"streamId":"…"}
//        (the stream's end is the socket closing; a "stop" event is taken as the same)
//   out  {"event":"playAudio","media":{"contentType":"audio/x-l16","sampleRate":16000,"payload":"<base64>"}}
//        {"event":"checkpoint","streamId":"…","name":"…"}   (answered by playedStream once the audio before it played)
//        {"event":"clearAudio","streamId":"…"}              (drops queued audio; answered by clearedAudio)
//
// sequenceNumber and chunk are numbers here (Twilio's and Telnyx's are strings); either is taken.
import { z } from 'zod';
import type { LineFormat } from '../../audio/line-format.ts';
import { PLIVO_DEFAULT_FORMAT } from './xml.ts';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const Counter = z.union([z.number().int().nonnegative(), z.string().regex(/^\d+$/)]);

const MediaFormat = z.looseObject({ encoding: z.string(), sampleRate: z.union([z.number(), z.string()]) });

export const PlivoStart = z.looseObject({
  event: z.literal('start'),
  sequenceNumber: Counter.optional(),
  start: z.looseObject({
    callId: z.string().min(1).max(200),
    streamId: z.string().min(1).max(200),
    accountId: z.string().optional(),
    tracks: z.array(z.string()).optional(),
    mediaFormat: MediaFormat.optional(),
  }),
  extra_headers: z.string().optional(),
});
export type PlivoStart = z.infer<typeof PlivoStart>;

export const PlivoMedia = z.looseObject({
  event: z.literal('media'),
  sequenceNumber: Counter.optional(),
  streamId: z.string().optional(),
  media: z.looseObject({
    track: z.string().optional(),
    timestamp: z.union([z.string(), z.number()]).optional(),
    chunk: Counter.optional(),
    payload: z.string().regex(BASE64, 'base64'),
  }),
});
export type PlivoMedia = z.infer<typeof PlivoMedia>;

export const PlivoDtmf = z.looseObject({
  event: z.literal('dtmf'),
  dtmf: z.looseObject({ digit: z.string().regex(/^[0-9*#A-D]$/), track: z.string().optional() }),
});
export const PlivoPlayed = z.looseObject({ event: z.literal('playedStream'), name: z.string() });
export const PlivoCleared = z.looseObject({ event: z.literal('clearedAudio') });
export const PlivoStop = z.looseObject({ event: z.literal('stop') });

export const PlivoInbound = z.discriminatedUnion('event', [
  PlivoStart,
  PlivoMedia,
  PlivoDtmf,
  PlivoPlayed,
  PlivoCleared,
  PlivoStop,
]);
export type PlivoInbound = z.infer<typeof PlivoInbound>;

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** PlivoMedia's rules checked by hand: media comes 50 times a second per call, far cheaper than the schema. */
function asMedia(json: unknown): PlivoMedia | null {
  if (!isRecord(json) || json.event !== 'media' || !isRecord(json.media)) return null;
  const { track, payload } = json.media;
  if (typeof payload !== 'string' || !BASE64.test(payload) || (track !== undefined && typeof track !== 'string'))
    return null;
  return json as PlivoMedia;
}

export function parsePlivoMessage(text: string): { ok: true; message: PlivoInbound } | { ok: false; reason: string } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  const media = asMedia(json);
  if (media) return { ok: true, message: media };
  const parsed = PlivoInbound.safeParse(json);
  if (!parsed.success)
    return { ok: false, reason: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
  return { ok: true, message: parsed.data };
}

/**
 * The line format a start's mediaFormat announces (audio/x-l16 at 8000 or 16000, audio/x-mulaw at 8000); undefined for
 * one the service cannot carry. No mediaFormat: what the service asked for.
 */
export function lineFormatOf(start: PlivoStart): LineFormat | undefined {
  const format = start.start.mediaFormat;
  if (!format) return PLIVO_DEFAULT_FORMAT;
  const rate = Number(format.sampleRate);
  const encoding = format.encoding.toLowerCase().split(';')[0]!.trim();
  if (encoding === 'audio/x-mulaw' && rate === 8000) return { codec: 'mulaw', rate: 8000 };
  if (encoding === 'audio/x-l16' && (rate === 8000 || rate === 16000)) return { codec: 'l16le', rate };
  return undefined;
}

/** playAudio's media.contentType and sampleRate for a line format. */
function playAudioHead(format: LineFormat): string {
  const contentType = format.codec === 'mulaw' ? 'audio/x-mulaw' : 'audio/x-l16';
  return `{"event":"playAudio","media":{"contentType":"${contentType}","sampleRate":${format.rate},"payload":"`;
}

/** Builds playAudio text by concatenation (base64 needs no escaping): 50 a second per call. */
export function plivoPlayAudio(format: LineFormat): (payload: string) => string {
  const head = playAudioHead(format);
  return (payload) => `${head}${payload}"}}`;
}

export const plivoCheckpoint = (streamId: string, name: string) =>
  JSON.stringify({ event: 'checkpoint', streamId, name });
export const plivoClearAudio = (streamId: string) => JSON.stringify({ event: 'clearAudio', streamId });
