// The Plivo XML the service answers with (src/carriers/plivo/xml.ts): a bidirectional stream that
// keeps the call, wideband L16 by default, its address carrying the call and secret; a transfer's <Dial>.
import { describe, expect, it } from 'vitest';
import { connectStreamXml, dialXml, plivoMediaUrl, sayAndHangUpXml } from '../../../src/carriers/plivo/xml.ts';
import { dialOfXml, streamOfXml } from '../../helpers/plivo-standin.ts';

describe('Plivo XML', () => {
  it('the stream is bidirectional, keeps the call alive, asks for L16 at 16 kHz, and names the call and secret', () => {
    const stream = streamOfXml(connectStreamXml('https://agents.example.com', 'call_1', 'a&b"c'));
    expect(stream?.attributes).toMatchObject({
      bidirectional: 'true',
      keepCallAlive: 'true',
      audioTrack: 'inbound',
      contentType: 'audio/x-l16;rate=16000',
    });
    const url = new URL(stream!.url);
    expect(`${url.protocol}//${url.host}${url.pathname}`).toBe('wss://agents.example.com/media/plivo');
    expect(Object.fromEntries(url.searchParams)).toEqual({ call_id: 'call_1', secret: 'a&b"c' });
  });

  it('an http address streams over ws, and μ-law asks for audio/x-mulaw at 8 kHz', () => {
    expect(plivoMediaUrl('http://127.0.0.1:3000', 'c', 's')).toBe('ws://127.0.0.1:3000/media/plivo?call_id=c&secret=s');
    const stream = streamOfXml(connectStreamXml('http://h', 'c', 's', { codec: 'mulaw', rate: 8000 }));
    expect(stream?.attributes.contentType).toBe('audio/x-mulaw;rate=8000');
  });

  it('a transfer dials the number without "+", with its caller id, timeout, action and callback', () => {
    const dial = dialOfXml(
      dialXml({
        to: '+14155550123',
        callerId: '+14155550100',
        timeoutS: 20,
        action: 'https://h/a?x=1&y=2',
        callbackUrl: 'https://h/c',
      }),
    );
    expect(dial).toEqual({
      number: '14155550123',
      attributes: {
        action: 'https://h/a?x=1&y=2',
        method: 'POST',
        callbackUrl: 'https://h/c',
        callbackMethod: 'POST',
        callerId: '14155550100',
        timeout: '20',
      },
    });
  });

  it('speech is escaped and followed by a hang-up', () => {
    expect(sayAndHangUpXml('Fish & <chips>')).toContain('<Speak>Fish &amp; &lt;chips&gt;</Speak><Hangup/>');
  });
});
