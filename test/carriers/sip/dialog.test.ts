import { describe, expect, it } from 'vitest';
import { parseSipUri, SipDialog, uriOf } from '../../../src/carriers/sip/dialog.ts';
import {
  header,
  headerValues,
  parseSipMessage,
  type SipRequest,
  type SipResponse,
} from '../../../src/carriers/sip/message.ts';
import { tagOf } from '../../../src/carriers/sip/transactions.ts';

function parse<T extends SipRequest | SipResponse>(lines: string[]): T {
  const parsed = parseSipMessage(Buffer.from([...lines, 'Content-Length: 0', '', ''].join('\r\n')));
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.message as T;
}

const invite = parse<SipRequest>([
  'INVITE sip:+15550001@198.51.100.7 SIP/2.0',
  'Via: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bKp1, SIP/2.0/UDP 192.0.2.10:5070;branch=z9hG4bKc1',
  'Record-Route: <sip:p2.example;lr>',
  'Record-Route: <sip:p1.example;lr>',
  'From: "Caller" <sip:+15551234@192.0.2.10>;tag=caller-tag',
  'To: <sip:+15550001@198.51.100.7>',
  'Call-ID: dlg-1@192.0.2.10',
  'CSeq: 10 INVITE',
  'Contact: <sip:caller@192.0.2.10:5070;transport=tcp>',
]);

function serverDialog() {
  return SipDialog.asServer(invite, {
    localTag: 'our-tag',
    localContact: '<sip:198.51.100.7:5060>',
    localSeq: 100,
    transport: 'udp',
  })!;
}

describe('SIP URIs', () => {
  it('reads user, host, port, transport and lr, and the URI inside a name-addr', () => {
    expect(parseSipUri('sip:%2B1555@[2001:db8::1]:5080;transport=TCP;lr')).toEqual({
      user: '+1555',
      host: '2001:db8::1',
      port: 5080,
      transport: 'tcp',
      lr: true,
    });
    expect(parseSipUri('sip:proxy.example')).toMatchObject({ user: undefined, port: undefined, lr: false });
    expect(parseSipUri('tel:+1555')).toBeUndefined();
    expect(parseSipUri('sip:a@b:70000')).toBeUndefined();
    expect(uriOf('"A, B" <sip:a@b;lr>;tag=x')).toBe('sip:a@b;lr');
    expect(uriOf('sip:a@b;tag=x')).toBe('sip:a@b');
  });
});

describe('SIP dialog', () => {
  it('as the answering side takes the INVITE’s Record-Route in order and its Contact as target', () => {
    const d = serverDialog();
    expect(d.state).toMatchObject({
      callId: 'dlg-1@192.0.2.10',
      localTag: 'our-tag',
      remoteTag: 'caller-tag',
      remoteSeq: 10,
      remoteTarget: 'sip:caller@192.0.2.10:5070;transport=tcp',
      routeSet: ['<sip:p2.example;lr>', '<sip:p1.example;lr>'],
    });
    expect(d.nextHop()).toEqual({ transport: 'udp', address: 'p2.example', port: 5060 });
  });

  it('builds a BYE to the target with the route set, its own tags and the next CSeq', () => {
    const d = serverDialog();
    const bye = d.request('BYE');
    expect(bye.uri).toBe('sip:caller@192.0.2.10:5070;transport=tcp');
    expect(headerValues(bye, 'route')).toEqual(['<sip:p2.example;lr>', '<sip:p1.example;lr>']);
    expect(header(bye, 'from')).toBe('<sip:+15550001@198.51.100.7>;tag=our-tag');
    expect(header(bye, 'to')).toBe('"Caller" <sip:+15551234@192.0.2.10>;tag=caller-tag');
    expect(header(bye, 'call-id')).toBe('dlg-1@192.0.2.10');
    expect(header(bye, 'cseq')).toBe('101 BYE');
    expect(header(d.request('INVITE', { body: 'v=0' }), 'cseq')).toBe('102 INVITE');
  });

  it('with a strict first router puts it in the Request-URI and the target last in Route', () => {
    const strict = parse<SipRequest>([
      ...[
        'INVITE sip:+15550001@198.51.100.7 SIP/2.0',
        'Via: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bKp1',
        'Record-Route: <sip:strict.example>',
      ],
      'From: <sip:+15551234@192.0.2.10>;tag=t',
      'To: <sip:+15550001@198.51.100.7>',
      'Call-ID: dlg-2',
      'CSeq: 1 INVITE',
      'Contact: <sip:caller@192.0.2.10>',
    ]);
    const d = SipDialog.asServer(strict, { localTag: 'o', localContact: '<sip:h>', localSeq: 1, transport: 'udp' })!;
    const bye = d.request('BYE');
    expect(bye.uri).toBe('sip:strict.example');
    expect(headerValues(bye, 'route')).toEqual(['<sip:caller@192.0.2.10>']);
  });

  it('refuses a request whose CSeq is not above the last, and moves the target on a re-INVITE', () => {
    const d = serverDialog();
    const reInvite = (cseq: number, contact: string) =>
      parse<SipRequest>([
        'INVITE sip:our@198.51.100.7 SIP/2.0',
        'Via: SIP/2.0/UDP 192.0.2.10:5070;branch=z9hG4bKre',
        'From: <sip:+15551234@192.0.2.10>;tag=caller-tag',
        'To: <sip:+15550001@198.51.100.7>;tag=our-tag',
        'Call-ID: dlg-1@192.0.2.10',
        `CSeq: ${cseq} INVITE`,
        `Contact: ${contact}`,
      ]);
    expect(d.owns(reInvite(11, '<sip:x@192.0.2.99>'))).toBe(true);
    expect(d.accept(reInvite(10, '<sip:x@192.0.2.99>'))).toBe(false);
    expect(d.state.remoteTarget).toBe('sip:caller@192.0.2.10:5070;transport=tcp');
    expect(d.accept(reInvite(11, '<sip:moved@192.0.2.99:5062>'))).toBe(true);
    expect(d.state.remoteTarget).toBe('sip:moved@192.0.2.99:5062');
    expect(d.state.remoteSeq).toBe(11);
  });

  it('as the calling side takes the 2xx’s Record-Route reversed, its To tag and Contact, and ACKs on the INVITE’s CSeq', () => {
    const ours = parse<SipRequest>([
      'INVITE sip:+15551234@203.0.113.5 SIP/2.0',
      'Via: SIP/2.0/UDP 198.51.100.7;branch=z9hG4bKout',
      'From: <sip:+15550001@198.51.100.7>;tag=ours',
      'To: <sip:+15551234@203.0.113.5>',
      'Call-ID: out-1',
      'CSeq: 1 INVITE',
      'Contact: <sip:198.51.100.7:5060>',
    ]);
    const ok = parse<SipResponse>([
      'SIP/2.0 200 OK',
      'Via: SIP/2.0/UDP 198.51.100.7;branch=z9hG4bKout',
      'Record-Route: <sip:b.example;lr>, <sip:a.example;lr>',
      'From: <sip:+15550001@198.51.100.7>;tag=ours',
      'To: <sip:+15551234@203.0.113.5>;tag=theirs',
      'Call-ID: out-1',
      'CSeq: 1 INVITE',
      'Contact: <sip:phone@203.0.113.9:5090>',
    ]);
    const d = SipDialog.asClient(ours, ok, { transport: 'udp' })!;
    expect(d.state.routeSet).toEqual(['<sip:a.example;lr>', '<sip:b.example;lr>']);
    const ack = d.ack(1);
    expect(ack.uri).toBe('sip:phone@203.0.113.9:5090');
    expect(header(ack, 'cseq')).toBe('1 ACK');
    expect(tagOf(header(ack, 'to'))).toBe('theirs');
    expect(header(d.request('BYE'), 'cseq')).toBe('2 BYE');
    expect(
      SipDialog.asClient(
        ours,
        { ...ok, headers: ok.headers.filter((h) => h.name !== 'contact') },
        { transport: 'udp' },
      ),
    ).toBe(undefined);
  });
});
