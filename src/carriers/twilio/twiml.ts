// TwiML the service gives Twilio: on an inbound call's voice webhook and with each outbound call
// it places. The stream URL carries no query string (Twilio forbids it): call_id and the per-call
// secret travel as <Parameter>s. A carrier that speaks TwiML (SignalWire's cXML) gets the same
// markup with its own stream path and codec (flavor.ts).
import { mediaPath, TWILIO_FLAVOR, type TwilioFlavor } from './flavor.ts';

const escapeXml = (s: string) =>
  s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);

/** The media address the carrier opens: PUBLIC_URL with https→wss, http→ws. */
export function mediaStreamUrl(publicUrl: string, flavor: TwilioFlavor = TWILIO_FLAVOR): string {
  return `${publicUrl.replace(/^http/, 'ws')}${mediaPath(flavor)}`;
}

export function connectStreamTwiml(
  publicUrl: string,
  callId: string,
  secret: string,
  flavor: TwilioFlavor = TWILIO_FLAVOR,
): string {
  const codec = flavor.streamCodec ? ` codec="${escapeXml(flavor.streamCodec)}"` : '';
  return (
    '<?xml version="1.0" encoding="UTF-8"?><Response><Connect>' +
    `<Stream url="${escapeXml(mediaStreamUrl(publicUrl, flavor))}"${codec}>` +
    `<Parameter name="call_id" value="${escapeXml(callId)}"/>` +
    `<Parameter name="secret" value="${escapeXml(secret)}"/>` +
    '</Stream></Connect></Response>'
  );
}

/**
 * A cold transfer: the caller is dialled through to `to`. `action` hears how the dial ended (a
 * caller whose transfer failed comes back to the agent through its answer); `answered` hears the
 * moment the destination picks up.
 */
export function dialTwiml(o: {
  to: string;
  callerId: string | null;
  timeoutS: number;
  action: string;
  answered: string;
}): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?><Response>' +
    `<Dial action="${escapeXml(o.action)}" method="POST" timeout="${o.timeoutS}"${o.callerId ? ` callerId="${escapeXml(o.callerId)}"` : ''}>` +
    `<Number statusCallbackEvent="answered" statusCallback="${escapeXml(o.answered)}" statusCallbackMethod="POST">${escapeXml(o.to)}</Number>` +
    '</Dial></Response>'
  );
}

/** Joins the call to conference `name`, which ends when either side leaves (a warm transfer's bridge). */
export function conferenceTwiml(name: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Dial><Conference startConferenceOnEnter="true" endConferenceOnExit="true">${escapeXml(name)}</Conference></Dial></Response>`;
}

export const HANG_UP_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>';

export function sayAndHangUpTwiml(text: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Say>${escapeXml(text)}</Say><Hangup/></Response>`;
}
