// Plivo XML the service answers with. An answered call (inbound, or one it placed) gets a
// bidirectional <Stream> to /media/plivo, the stream's address carrying the call_id and per-call
// secret (Plivo's extraHeaders take only letters and digits, so the secret cannot ride there).
// The <Stream> attributes relied on, as Plivo documents them: bidirectional (true: the service may
// send playAudio back), keepCallAlive (true: nothing after the stream runs until it ends),
// audioTrack (inbound; the only one allowed with bidirectional), contentType
// (audio/x-l16;rate=8000 | audio/x-l16;rate=16000 | audio/x-mulaw;rate=8000) and the WebSocket
// address as the element's text. A cold transfer's leg gets <Dial action callbackUrl callerId
// timeout><Number>…</Number></Dial>: Plivo requests callbackUrl as the new leg is answered
// (DialAction=answer) or hung up, and action once the dial is over (DialStatus=completed | busy |
// failed | timeout | no-answer). A warm transfer's two legs each get <Conference
// startConferenceOnEnter endConferenceOnExit>room</Conference>: callers of the same room name (within
// the account) talk together; the room starts as a member enters, and ends as one with
// endConferenceOnExit leaves (both here: either hanging up ends the other's call too).
import type { LineFormat } from '../../audio/line-format.ts';

const escapeXml = (s: string) =>
  s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);

export const PLIVO_MEDIA_PATH = '/media/plivo';

/**
 * What the service asks Plivo to stream by default: L16 at 16 kHz, the wideband Plivo offers (the recogniser reads it
 * better than 8 kHz μ-law). Plivo's docs name it audio/x-l16, 16-bit linear PCM, without a byte order; its stream
 * carries the samples little-endian (the order of its own examples' raw PCM), so the line reads them so.
 */
export const PLIVO_DEFAULT_FORMAT: LineFormat = { codec: 'l16le', rate: 16000 };

/** contentType for a line format (μ-law only at 8 kHz, as Plivo offers it). */
export function plivoContentType(format: LineFormat): string {
  return format.codec === 'mulaw' ? 'audio/x-mulaw;rate=8000' : `audio/x-l16;rate=${format.rate}`;
}

/** The media address Plivo opens for `callId`: PUBLIC_URL with https→wss, http→ws, the call and secret in its query. */
export function plivoMediaUrl(publicUrl: string, callId: string, secret: string): string {
  const query = new URLSearchParams({ call_id: callId, secret }).toString();
  return `${publicUrl.replace(/^http/, 'ws')}${PLIVO_MEDIA_PATH}?${query}`;
}

export function connectStreamXml(
  publicUrl: string,
  callId: string,
  secret: string,
  format: LineFormat = PLIVO_DEFAULT_FORMAT,
): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?><Response>' +
    `<Stream bidirectional="true" keepCallAlive="true" audioTrack="inbound" contentType="${plivoContentType(format)}">` +
    `${escapeXml(plivoMediaUrl(publicUrl, callId, secret))}</Stream></Response>`
  );
}

export function sayAndHangUpXml(text: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Speak>${escapeXml(text)}</Speak><Hangup/></Response>`;
}

export function hangUpXml(): string {
  return '<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>';
}

export interface DialXml {
  to: string;
  /** The caller id the destination sees; Plivo's default (the caller's) when absent. */
  callerId?: string | undefined;
  timeoutS: number;
  /** Requested once the dial is over, with DialStatus. */
  action: string;
  /** Requested as the new leg is answered or hung up, with DialAction. */
  callbackUrl: string;
}

/** Plivo numbers are digits with the country code and no "+". */
export const plivoNumber = (e164: string) => e164.replace(/^\+/, '');

export function dialXml(o: DialXml): string {
  const callerId = o.callerId ? ` callerId="${escapeXml(plivoNumber(o.callerId))}"` : '';
  return (
    '<?xml version="1.0" encoding="UTF-8"?><Response>' +
    `<Dial action="${escapeXml(o.action)}" method="POST" callbackUrl="${escapeXml(o.callbackUrl)}" callbackMethod="POST"${callerId} timeout="${o.timeoutS}">` +
    `<Number>${escapeXml(plivoNumber(o.to))}</Number></Dial></Response>`
  );
}

/** A warm transfer's bridge: the leg joins room `name`, which ends when either of its two members leaves. */
export function conferenceXml(name: string): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?><Response>' +
    `<Conference startConferenceOnEnter="true" endConferenceOnExit="true">${escapeXml(name)}</Conference></Response>`
  );
}
