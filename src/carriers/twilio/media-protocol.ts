// Twilio Media Streams messages (docs/twilio.md): validated as they arrive, so a malformed
// frame is dropped with a log line and never reaches the session.
import { z } from 'zod';

export const TwilioConnected = z.object({ event: z.literal('connected') });

export const TwilioStart = z.object({
  event: z.literal('start'),
  streamSid: z.string().min(1),
  start: z.object({
    streamSid: z.string().min(1),
    callSid: z.string().min(1),
    accountSid: z.string().optional(),
    customParameters: z.record(z.string(), z.string()).default({}),
    mediaFormat: z.object({ encoding: z.string(), sampleRate: z.number(), channels: z.number() }).optional(),
  }),
});

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export const TwilioMedia = z.object({
  event: z.literal('media'),
  media: z.object({
    track: z.string().optional(),
    chunk: z.string().optional(),
    timestamp: z.string().optional(),
    payload: z.string().regex(BASE64, 'base64'),
  }),
});
type TwilioMedia = z.infer<typeof TwilioMedia>;

export const TwilioMark = z.object({ event: z.literal('mark'), mark: z.object({ name: z.string() }) });
export const TwilioDtmf = z.object({ event: z.literal('dtmf'), dtmf: z.object({ digit: z.string().min(1) }) });
export const TwilioStop = z.object({ event: z.literal('stop') });

export const TwilioInbound = z.discriminatedUnion('event', [
  TwilioConnected,
  TwilioStart,
  TwilioMedia,
  TwilioMark,
  TwilioDtmf,
  TwilioStop,
]);
export type TwilioInbound = z.infer<typeof TwilioInbound>;

/** Parses one text frame; a reason string when it is not a message we understand. */
export function parseTwilioMessage(text: string): { ok: true; message: TwilioInbound } | { ok: false; reason: string } {
  const canonical = CANONICAL_MEDIA.exec(text);
  if (canonical)
    return {
      ok: true,
      message: {
        event: 'media',
        media: { track: canonical[1]!, chunk: canonical[2]!, timestamp: canonical[3]!, payload: canonical[4]! },
      },
    };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  const media = asMedia(json);
  if (media) return { ok: true, message: media };
  const parsed = TwilioInbound.safeParse(json);
  if (!parsed.success)
    return { ok: false, reason: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
  return { ok: true, message: parsed.data };
}

/**
 * The text before a media message's base64 payload; base64 needs no escaping, so prefix + payload + suffix is the JSON.
 */
export const twilioMediaPrefix = (streamSid: string) =>
  `{"event":"media","streamSid":${JSON.stringify(streamSid)},"media":{"payload":"`;
export const TWILIO_MEDIA_SUFFIX = '"}}';
export const twilioMedia = (streamSid: string, payload: string) =>
  twilioMediaPrefix(streamSid) + payload + TWILIO_MEDIA_SUFFIX;
export const twilioMark = (streamSid: string, name: string) =>
  JSON.stringify({ event: 'mark', streamSid, mark: { name } });
export const twilioClear = (streamSid: string) => JSON.stringify({ event: 'clear', streamSid });

/**
 * A media message exactly as Twilio lays it out. Every field matched is a JSON string without
 * escapes, so a match is valid JSON that the schema accepts, and its values are the captures:
 * the usual frame needs no JSON.parse. Any other layout takes the general path.
 */
const CANONICAL_MEDIA =
  /^\{"event":"media","sequenceNumber":"\d*","media":\{"track":"([a-z_]*)","chunk":"(\d*)","timestamp":"(\d*)","payload":"([A-Za-z0-9+/]*={0,2})"\},"streamSid":"[A-Za-z0-9]*"\}$/;
const CANONICAL_MEDIA_PAYLOAD =
  /^\{"event":"media","sequenceNumber":"\d*","media":\{"track":"[a-z_]*","chunk":"\d*","timestamp":"\d*","payload":"([A-Za-z0-9+/]*={0,2})"\},"streamSid":"[A-Za-z0-9]*"\}$/;

/**
 * The payload of a media message in Twilio's own layout, or null for any other message: the
 * transport's per-frame path, which needs nothing else and so builds no message objects. A
 * non-null answer is exactly what parseTwilioMessage would give as media.payload.
 */
export function canonicalMediaPayload(text: string): string | null {
  return CANONICAL_MEDIA_PAYLOAD.exec(text)?.[1] ?? null;
}

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const optionalString = (x: unknown): x is string | undefined => x === undefined || typeof x === 'string';

/**
 * TwilioMedia's own rules, checked by hand: media arrives 50 times a second per call, and this
 * costs a fraction of the schema's parse. Null for anything else (the schema then decides, and
 * says why it refused); tested to accept exactly what the schema accepts.
 */
function asMedia(json: unknown): TwilioMedia | null {
  if (!isRecord(json) || json.event !== 'media' || !isRecord(json.media)) return null;
  const { track, chunk, timestamp, payload } = json.media;
  if (
    typeof payload !== 'string' ||
    !BASE64.test(payload) ||
    !optionalString(track) ||
    !optionalString(chunk) ||
    !optionalString(timestamp)
  )
    return null;
  const media: TwilioMedia['media'] = { payload };
  if (track !== undefined) media.track = track;
  if (chunk !== undefined) media.chunk = chunk;
  if (timestamp !== undefined) media.timestamp = timestamp;
  return { event: 'media', media };
}
