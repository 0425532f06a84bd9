// Vonage's WebSocket media protocol, as Vonage documents it. From Vonage: first a text message
//
//   {"event":"websocket:connected","content-type":"audio/l16;rate=16000", …the connect endpoint's headers}
//
// then binary messages, each 20 ms of 16-bit little-endian linear PCM (640 bytes at 16 kHz, 320 at
// 8 kHz), and text events among them:
//
//   {"event":"websocket:dtmf","digit":"5","duration":260}
//   {"event":"websocket:notify","payload":{…}}     the audio sent before a notify action has played
//   {"event":"websocket:cleared"}                  a clear action emptied the playback buffer
//
// To Vonage: binary messages of the same size, and text actions {"action":"clear"} (drop what is
// queued to play: barge-in) and {"action":"notify","payload":{…}} (answered with websocket:notify
// once what was sent before it has played). A malformed message is reported, never thrown.
import { z } from 'zod';
import type { LineFormat } from '../../audio/line-format.ts';

const Connected = z.looseObject({
  event: z.literal('websocket:connected'),
  'content-type': z.string().max(100),
  call_id: z.string().max(200).optional(),
  secret: z.string().max(500).optional(),
});
const Dtmf = z.looseObject({ event: z.literal('websocket:dtmf'), digit: z.string().regex(/^[0-9*#A-Da-d]$/) });
const Notify = z.looseObject({
  event: z.literal('websocket:notify'),
  payload: z.looseObject({ mark: z.string().max(200).optional() }).optional(),
});
const Other = z.looseObject({ event: z.string().min(1).max(100) });

export type VonageConnected = z.infer<typeof Connected>;
export type VonageEvent =
  | VonageConnected
  | z.infer<typeof Dtmf>
  | { event: 'websocket:notify'; mark: string | undefined }
  | { event: 'other'; name: string };

export type Parsed = { ok: true; message: VonageEvent } | { ok: false; reason: string };

export function parseVonageEvent(text: string): Parsed {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  const other = Other.safeParse(value);
  if (!other.success) return { ok: false, reason: 'no event' };
  const schema = { 'websocket:connected': Connected, 'websocket:dtmf': Dtmf }[other.data.event];
  if (other.data.event === 'websocket:notify') {
    const notify = Notify.safeParse(value);
    if (!notify.success) return { ok: false, reason: 'malformed websocket:notify' };
    return { ok: true, message: { event: 'websocket:notify', mark: notify.data.payload?.mark } };
  }
  if (!schema) return { ok: true, message: { event: 'other', name: other.data.event } };
  const parsed = schema.safeParse(value);
  if (!parsed.success) return { ok: false, reason: `malformed ${other.data.event}` };
  return { ok: true, message: parsed.data };
}

/** The line a content-type names: L16 at 8 or 16 kHz (little-endian); undefined for anything else. */
export function lineFormatOf(contentType: string): LineFormat | undefined {
  const m = /^audio\/l16;\s*rate=(8000|16000)$/i.exec(contentType.trim());
  if (!m) return undefined;
  return { codec: 'l16le', rate: m[1] === '8000' ? 8000 : 16000 };
}

export const VONAGE_CLEAR = '{"action":"clear"}';

export function vonageNotify(mark: string): string {
  return JSON.stringify({ action: 'notify', payload: { mark } });
}
