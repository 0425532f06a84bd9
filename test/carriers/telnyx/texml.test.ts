import { describe, expect, it } from 'vitest';
import {
  connectStreamTexml,
  sayAndHangUpTexml,
  streamCodecFor,
  telnyxMediaUrl,
} from '../../../src/carriers/telnyx/texml.ts';
import { streamOfTexml } from '../../helpers/telnyx-standin.ts';

describe('TeXML the service answers with', () => {
  it("connects a bidirectional RTP stream, PCMU both ways, of the caller's track, to /media/telnyx on the public address", () => {
    const texml = connectStreamTexml('https://voice.example.com', 'call_1', 'secret-1');
    expect(texml).toBe(
      '<?xml version="1.0" encoding="UTF-8"?><Response><Connect>' +
        '<Stream url="wss://voice.example.com/media/telnyx" track="inbound_track" codec="PCMU" bidirectionalMode="rtp" bidirectionalCodec="PCMU">' +
        '<Parameter name="call_id" value="call_1"/><Parameter name="secret" value="secret-1"/>' +
        '</Stream></Connect></Response>',
    );
    expect(telnyxMediaUrl('http://127.0.0.1:8080')).toBe('ws://127.0.0.1:8080/media/telnyx');
  });

  it('escapes what it puts in attributes and text, so a value cannot end the XML early', () => {
    const texml = connectStreamTexml('https://x.example', 'a"b<c>&', "s'");
    expect(texml).toContain('value="a&quot;b&lt;c&gt;&amp;"');
    expect(texml).toContain('value="s&apos;"');
    expect(streamOfTexml(texml)?.parameters).toEqual({ call_id: 'a"b<c>&', secret: "s'" });
    expect(sayAndHangUpTexml('<Hangup/>')).toContain('<Say>&lt;Hangup/&gt;</Say><Hangup/>');
  });

  it('a party at a SIP address (a SIP or WebRTC leg) is asked for G.722 at 16 kHz both ways; a phone number for PCMU', () => {
    expect(streamCodecFor('sip:alice@pbx.example.com')).toBe('G722');
    expect(streamCodecFor('SIPS:bob@example.com')).toBe('G722');
    expect(streamCodecFor('+14155550100')).toBe('PCMU');
    const texml = connectStreamTexml('https://voice.example.com', 'call_1', 'secret-1', 'G722');
    expect(texml).toContain(
      '<Stream url="wss://voice.example.com/media/telnyx" track="inbound_track" codec="G722" bidirectionalMode="rtp" bidirectionalCodec="G722" bidirectionalSamplingRate="16000">',
    );
  });
});
