import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  header,
  headerValues,
  MAX_SIP_MESSAGE_BYTES,
  parseSipMessage,
  responseTo,
  serializeSipMessage,
  SipStreamFramer,
  type SipRequest,
} from '../../../src/carriers/sip/message.ts';
import { FUZZ_SEED, runs } from '../../helpers/fuzz.ts';

const sdp = 'v=0\r\no=- 1 1 IN IP4 192.0.2.10\r\ns=-\r\nc=IN IP4 192.0.2.10\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\n';
const invite = [
  'INVITE sip:+15550001@198.51.100.7:5060 SIP/2.0',
  'Via: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bK776asdhds;rport',
  'v: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKproxy, SIP/2.0/UDP 192.0.2.2;branch=z9hG4bKfirst',
  'Max-Forwards: 70',
  'From: "Caller, Esq." <sip:+15551234@192.0.2.10>;tag=1928301774',
  't: <sip:+15550001@198.51.100.7>',
  'Call-ID: a84b4c76e66710@192.0.2.10',
  'CSeq: 314159 INVITE',
  'Contact: <sip:caller@192.0.2.10:5060>',
  'Subject: a folded',
  '  header value',
  'Content-Type: application/sdp',
  `Content-Length: ${Buffer.byteLength(sdp)}`,
  '',
  sdp,
].join('\r\n');

function request(text: string): SipRequest {
  const parsed = parseSipMessage(Buffer.from(text, 'latin1'));
  if (!parsed.ok) throw new Error(parsed.reason);
  if (parsed.message.kind !== 'request') throw new Error('not a request');
  return parsed.message;
}

function refusal(text: string | Uint8Array): string | undefined {
  const parsed = parseSipMessage(typeof text === 'string' ? Buffer.from(text, 'latin1') : text);
  return parsed.ok ? undefined : parsed.reason;
}

describe('SIP messages', () => {
  it('reads a request: method, URI, headers in order with compact names expanded, folded lines joined, the body', () => {
    const m = request(invite);
    expect(m.method).toBe('INVITE');
    expect(m.uri).toBe('sip:+15550001@198.51.100.7:5060');
    expect(header(m, 'TO')).toBe('<sip:+15550001@198.51.100.7>');
    expect(header(m, 't')).toBe('<sip:+15550001@198.51.100.7>');
    expect(header(m, 'subject')).toBe('a folded header value');
    expect(headerValues(m, 'via')).toEqual([
      'SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bK776asdhds;rport',
      'SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKproxy',
      'SIP/2.0/UDP 192.0.2.2;branch=z9hG4bKfirst',
    ]);
    expect(headerValues(m, 'from')).toEqual(['"Caller, Esq." <sip:+15551234@192.0.2.10>;tag=1928301774']);
    expect(m.body).toBe(sdp);
  });

  it('reads a response status line', () => {
    const parsed = parseSipMessage(
      Buffer.from('SIP/2.0 486 Busy Here\r\nVia: SIP/2.0/UDP x;branch=z9hG4bK1\r\nContent-Length: 0\r\n\r\n'),
    );
    expect(parsed).toMatchObject({ ok: true, message: { kind: 'response', status: 486, reason: 'Busy Here' } });
  });

  it('takes the body as long as Content-Length says, ignoring bytes after it', () => {
    expect(request(invite + 'trailing garbage').body).toBe(sdp);
  });

  it('refuses, with a reason, what a listener must answer 400 or drop', () => {
    expect(refusal('INVITE sip:x SIP/2.0\r\nVia: a')).toMatch(/empty line/);
    expect(refusal('HELLO\r\n\r\n')).toMatch(/first line/);
    expect(refusal(invite.replace('SIP/2.0\r\n', 'SIP/3.0\r\n'))).toMatch(/first line/);
    expect(refusal(invite.replace(/Call-ID:[^\r]*\r\n/, ''))).toMatch(/call-id/);
    expect(refusal(invite.replace('CSeq: 314159 INVITE', 'CSeq: 314159 BYE'))).toMatch(/CSeq/);
    expect(refusal(invite.replace(/Content-Length: \d+/, 'Content-Length: 9999'))).toMatch(/shorter/);
    expect(refusal(invite.replace(/Content-Length: \d+/, 'Content-Length: -1'))).toMatch(/Content-Length/);
    expect(refusal(invite.replace('Max-Forwards: 70', 'Max Forwards 70'))).toMatch(/name: value/);
    expect(refusal(' folded first\r\n' + invite)).toBeDefined();
    expect(refusal(new Uint8Array(MAX_SIP_MESSAGE_BYTES + 1))).toMatch(/longer/);
    const many = invite.replace('Max-Forwards: 70', Array(101).fill('X-A: 1').join('\r\n'));
    expect(refusal(many)).toMatch(/header fields/);
  });

  it('never throws, whatever bytes arrive', () => {
    const lines = invite.split('\r\n');
    const datagram = fc.oneof(
      fc.uint8Array({ maxLength: 512 }),
      fc
        .array(fc.oneof(fc.constantFrom(...lines), fc.string({ maxLength: 60 })), { maxLength: 25 })
        .map((picked) => Buffer.from(picked.join('\r\n'), 'latin1')),
    );
    fc.assert(
      fc.property(datagram, (bytes) => {
        parseSipMessage(bytes);
      }),
      { seed: FUZZ_SEED, numRuns: runs(1000) },
    );
  });

  it('answers with the request’s Via, From, Call-ID and CSeq, a To tag, and the body’s Content-Length', () => {
    const ok = responseTo(request(invite), 200, 'OK', {
      toTag: 'abc',
      headers: [{ name: 'content-type', value: 'application/sdp' }],
      body: 'v=0\r\n',
    });
    const text = serializeSipMessage(ok).toString('latin1');
    expect(text.split('\r\n')).toEqual([
      'SIP/2.0 200 OK',
      'Via: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bK776asdhds;rport',
      'Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKproxy, SIP/2.0/UDP 192.0.2.2;branch=z9hG4bKfirst',
      'From: "Caller, Esq." <sip:+15551234@192.0.2.10>;tag=1928301774',
      'Call-ID: a84b4c76e66710@192.0.2.10',
      'CSeq: 314159 INVITE',
      'To: <sip:+15550001@198.51.100.7>;tag=abc',
      'Content-Type: application/sdp',
      'Content-Length: 5',
      '',
      'v=0',
      '',
    ]);
    const again = parseSipMessage(serializeSipMessage(ok));
    expect(again).toMatchObject({ ok: true, message: { kind: 'response', status: 200, body: 'v=0\r\n' } });
  });

  it('keeps the To tag a request already has', () => {
    const reinvite = invite.replace('t: <sip:+15550001@198.51.100.7>', 't: <sip:+15550001@198.51.100.7>;tag=old');
    expect(header(responseTo(request(reinvite), 200, 'OK', { toTag: 'new' }), 'to')).toBe(
      '<sip:+15550001@198.51.100.7>;tag=old',
    );
  });
});

describe('SIP over a stream', () => {
  const options = (n: number, body = '') =>
    `OPTIONS sip:x SIP/2.0\r\nVia: SIP/2.0/TCP h;branch=z9hG4bK${n}\r\nl: ${body.length}\r\n\r\n${body}`;

  it('cuts messages at Content-Length however the stream splits them, and counts keep-alive pings', () => {
    const stream = Buffer.from(options(1, 'abc') + '\r\n\r\n' + options(2) + options(3, 'de'));
    for (const size of [1, 7, 64, stream.length]) {
      const framer = new SipStreamFramer();
      const messages: string[] = [];
      let pings = 0;
      for (let at = 0; at < stream.length; at += size) {
        const out = framer.push(stream.subarray(at, at + size));
        expect(out.error).toBeUndefined();
        messages.push(...out.messages.map((m) => m.toString('latin1')));
        pings += out.pings;
      }
      expect(messages, `chunks of ${size}`).toEqual([options(1, 'abc'), options(2), options(3, 'de')]);
      expect(pings).toBe(1);
    }
  });

  it('reports a message without Content-Length, and one larger than the bound, without buffering it', () => {
    expect(new SipStreamFramer().push(Buffer.from('OPTIONS sip:x SIP/2.0\r\nVia: a\r\n\r\n')).error).toMatch(
      /Content-Length/,
    );
    expect(new SipStreamFramer().push(Buffer.from(options(1).replace('l: 0', 'l: 99999'))).error).toMatch(/longer/);
    const framer = new SipStreamFramer();
    const endless = Buffer.alloc(1024, 'a');
    let error: string | undefined;
    for (let i = 0; i < 20 && !error; i++) error = framer.push(endless).error;
    expect(error).toMatch(/too long/);
  });
});
