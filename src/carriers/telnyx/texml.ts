// TeXML the service gives Telnyx: on an inbound call's voice webhook (voice-webhook.ts), and
// inline with each call it places (dialer.ts). The stream is bidirectional in RTP mode, one codec
// both ways, the caller's track only; call_id and the per-call secret travel as <Parameter>s,
// which Telnyx hands back in the start message's custom_parameters. The <Stream> attributes relied
// on, as Telnyx documents them: url, track (inbound_track|outbound_track|both_tracks), codec
// (PCMU|PCMA|G722|OPUS|AMR-WB|default; "When set to 'default' or when transcoding is not possible,
// the codec from the call will be used. Currently, transcoding is only supported between PCMU and
// PCMA codecs."), bidirectionalMode (mp3|rtp), bidirectionalCodec (PCMU|PCMA|G722|OPUS|AMR-WB,
// PCMU by default: there is no 'default' for it), bidirectionalSamplingRate (8000|16000|24000,
// 8000 by default), and <Parameter name value> children.
//
// Which codec is asked: the agent answers in the codec the caller is heard in (transport.ts), so
// the stream's codec and bidirectionalCodec must be the one the leg will stream. Telnyx offers no
// "the call's own codec" for the answer, so the service picks by the far party's address
// (streamCodecFor): a number is a leg from the phone network, μ-law 8 kHz (PCMA transcodes to it);
// a SIP address (a SIP or WebRTC leg) may carry G.722, which then streams as it is, 16 kHz both
// ways. A SIP leg that negotiated G.711 instead streams G.711 in (it cannot be transcoded to G.722).
const escapeXml = (s: string) =>
  s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);

export const TELNYX_MEDIA_PATH = '/media/telnyx';

/** The media address Telnyx opens: PUBLIC_URL with https→wss, http→ws. */
export function telnyxMediaUrl(publicUrl: string): string {
  return `${publicUrl.replace(/^http/, 'ws')}${TELNYX_MEDIA_PATH}`;
}

/** The codecs the service asks a Telnyx stream for: μ-law 8 kHz, or G.722 (wideband, 16 kHz). */
export type TelnyxStreamCodec = 'PCMU' | 'G722';

/** The codec to ask of a call whose far party is `party` (its From inbound, its To outbound). */
export function streamCodecFor(party: string): TelnyxStreamCodec {
  return /^sips?:/i.test(party.trim()) ? 'G722' : 'PCMU';
}

const CODEC_ATTRIBUTES: Record<TelnyxStreamCodec, string> = {
  PCMU: 'codec="PCMU" bidirectionalMode="rtp" bidirectionalCodec="PCMU"',
  G722: 'codec="G722" bidirectionalMode="rtp" bidirectionalCodec="G722" bidirectionalSamplingRate="16000"',
};

export function connectStreamTexml(
  publicUrl: string,
  callId: string,
  secret: string,
  codec: TelnyxStreamCodec = 'PCMU',
): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?><Response><Connect>' +
    `<Stream url="${escapeXml(telnyxMediaUrl(publicUrl))}" track="inbound_track" ${CODEC_ATTRIBUTES[codec]}>` +
    `<Parameter name="call_id" value="${escapeXml(callId)}"/>` +
    `<Parameter name="secret" value="${escapeXml(secret)}"/>` +
    '</Stream></Connect></Response>'
  );
}

export function sayAndHangUpTexml(text: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Say>${escapeXml(text)}</Say><Hangup/></Response>`;
}
