// TeXML the service gives Telnyx: on an inbound call's voice webhook (voice-webhook.ts), and
// inline with each call it places (dialer.ts). The stream is bidirectional in RTP mode, PCMU
// both ways, the caller's track only; call_id and the per-call secret travel as <Parameter>s,
// which Telnyx hands back in the start message's custom_parameters. The <Stream> attributes relied
// on, as Telnyx documents them: url, track (inbound_track|outbound_track|both_tracks), codec
// (PCMU|PCMA|G722|OPUS|AMR-WB|default), bidirectionalMode (mp3|rtp), bidirectionalCodec
// (PCMU|PCMA|G722|OPUS|AMR-WB), and <Parameter name value> children.
const escapeXml = (s: string) =>
  s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);

export const TELNYX_MEDIA_PATH = '/media/telnyx';

/** The media address Telnyx opens: PUBLIC_URL with https→wss, http→ws. */
export function telnyxMediaUrl(publicUrl: string): string {
  return `${publicUrl.replace(/^http/, 'ws')}${TELNYX_MEDIA_PATH}`;
}

export function connectStreamTexml(publicUrl: string, callId: string, secret: string): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?><Response><Connect>' +
    `<Stream url="${escapeXml(telnyxMediaUrl(publicUrl))}" track="inbound_track" codec="PCMU" bidirectionalMode="rtp" bidirectionalCodec="PCMU">` +
    `<Parameter name="call_id" value="${escapeXml(callId)}"/>` +
    `<Parameter name="secret" value="${escapeXml(secret)}"/>` +
    '</Stream></Connect></Response>'
  );
}

export function sayAndHangUpTexml(text: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Say>${escapeXml(text)}</Say><Hangup/></Response>`;
}
