import { describe, expect, it } from 'vitest';
import {
  canonicalMediaPayload,
  parseTwilioMessage,
  TwilioInbound,
  twilioMedia,
} from '../../../src/carriers/twilio/media-protocol.ts';

const media = (m: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ event: 'media', sequenceNumber: '3', streamSid: 'MZ1', media: m, ...extra });

// Media messages skip the schema's parse for a hand check: it must accept and give exactly what the schema does.
// Twilio's own layout (key order, no spaces): the regex path.
const canonical = (media: string) => `{"event":"media","sequenceNumber":"4","media":${media},"streamSid":"MZ0123abc"}`;

const cases = [
  canonical('{"track":"inbound","chunk":"2","timestamp":"5","payload":"no+JhoaJjpzS"}'),
  canonical('{"track":"inbound","chunk":"2","timestamp":"5","payload":""}'),
  canonical('{"track":"inbound","chunk":"2","timestamp":"5","payload":"no+J!hoa"}'),
  canonical('{"track":"inbound","chunk":"2","timestamp":"5","payload":"no+J\\u0041"}'),
  canonical('{"track":"in\\u0062ound","chunk":"2","timestamp":"5","payload":"AAAA"}'),
  canonical('{"track":"inbound","chunk":"2","timestamp":"5","payload":"AAAA"} '),
  `${canonical('{"track":"inbound","chunk":"2","timestamp":"5","payload":"AAAA"}')} `,
  media({ track: 'inbound', chunk: '2', timestamp: '20', payload: '/////w==' }),
  media({ payload: '' }),
  media({ payload: 'AAAA', extra: 1 }),
  media({ payload: 'AAAA', track: undefined }),
  media({ payload: 'not base64!' }),
  media({ payload: 'AA==A' }),
  media({ payload: 7 }),
  media({ track: 'inbound' }),
  media({ payload: 'AAAA', track: 1 }),
  media({ payload: 'AAAA', chunk: null }),
  media({ payload: 'AAAA', timestamp: {} }),
  media(['AAAA']),
  media(null),
  media('AAAA'),
  JSON.stringify({ event: 'media' }),
  JSON.stringify([{ event: 'media', media: { payload: 'AAAA' } }]),
  JSON.stringify({ event: 'mark', mark: { name: 'u1:end' } }),
  JSON.stringify({ event: 'stop' }),
  JSON.stringify({ event: 'dtmf', dtmf: { digit: '' } }),
  '"media"',
  'null',
];

describe('Twilio media stream messages', () => {
  it.each(cases)('parses %s exactly as the schema does', (text) => {
    const parsed = parseTwilioMessage(text);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = Symbol('not JSON');
    }
    const schema = TwilioInbound.safeParse(json);
    expect(parsed.ok).toBe(schema.success);
    if (parsed.ok && schema.success) expect(parsed.message).toStrictEqual(schema.data);
    // The transport's shortcut gives a payload only where the full parse gives that media payload.
    const payload = canonicalMediaPayload(text);
    if (payload !== null)
      expect(parsed.ok && parsed.message.event === 'media' && parsed.message.media.payload).toBe(payload);
  });

  it("takes the payload of Twilio's own layout without building a message", () => {
    expect(canonicalMediaPayload(cases[0]!)).toBe('no+JhoaJjpzS');
    expect(canonicalMediaPayload(cases[2]!)).toBeNull();
  });

  it('says why it refused a message', () => {
    expect(parseTwilioMessage('{')).toEqual({ ok: false, reason: 'not JSON' });
    expect(parseTwilioMessage(media({ payload: 'not base64!' }))).toMatchObject({
      ok: false,
      reason: expect.stringContaining('media.payload'),
    });
  });

  it('builds the media message as JSON.stringify would', () => {
    const sid = 'MZ"quoted\\sid';
    expect(twilioMedia(sid, 'AAAA/+==')).toBe(
      JSON.stringify({ event: 'media', streamSid: sid, media: { payload: 'AAAA/+==' } }),
    );
  });
});
