import { describe, expect, it } from 'vitest';
import {
  addressAllowed,
  calledNumberOf,
  InboundAdmission,
  type InboundTrunk,
} from '../../../src/carriers/sip/admission.ts';
import { answerDigestChallenge, DigestServer } from '../../../src/carriers/sip/digest.ts';
import { parseSipMessage, type SipRequest } from '../../../src/carriers/sip/message.ts';
import type { SipPeer } from '../../../src/carriers/sip/wire.ts';

function invite(uri: string, extra: string[] = []): SipRequest {
  const parsed = parseSipMessage(
    Buffer.from(
      [
        `INVITE ${uri} SIP/2.0`,
        'Via: SIP/2.0/UDP 192.0.2.10;branch=z9hG4bKa',
        'From: <sip:+15551234@192.0.2.10>;tag=f',
        'To: <sip:+15550001@198.51.100.7>',
        'Call-ID: adm-1',
        'CSeq: 1 INVITE',
        ...extra,
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n'),
    ),
  );
  if (!parsed.ok || parsed.message.kind !== 'request') throw new Error('bad test request');
  return parsed.message;
}

const from = (address: string): SipPeer => ({ transport: 'udp', address, port: 5060 });
const digest = new DigestServer({
  key: Buffer.alloc(32, 1),
  realm: 'voice.example',
  clock: { now: () => 1_700_000_000_000 },
  random: (bytes) => 'cd'.repeat(bytes),
});

const byAddress: InboundTrunk<string> = {
  numbers: ['+15550001'],
  allowedAddresses: ['192.0.2.0/24', '2001:db8::/32'],
  value: 'trunk-addr',
};
const byPassword: InboundTrunk<string> = {
  numbers: ['+15550002'],
  allowedAddresses: [],
  username: 'pbx',
  password: 'pbx-secret',
  value: 'trunk-pass',
};

describe('called number', () => {
  it('is the Request-URI user part as E.164 with +, with or without it, separators and parameters dropped', () => {
    expect(calledNumberOf('sip:+15550001@198.51.100.7')).toBe('+15550001');
    expect(calledNumberOf('sip:15550001@198.51.100.7:5060;transport=udp')).toBe('+15550001');
    expect(calledNumberOf('sip:%2B1-555-0001;npdi@host')).toBe('+15550001');
    expect(calledNumberOf('sip:alice@host')).toBeUndefined();
    expect(calledNumberOf('sip:host')).toBeUndefined();
  });
});

describe('allowed addresses', () => {
  it('matches CIDR blocks and single addresses of either family, and nothing unreadable', () => {
    expect(addressAllowed('192.0.2.77', ['192.0.2.0/24'])).toBe(true);
    expect(addressAllowed('192.0.3.1', ['192.0.2.0/24'])).toBe(false);
    expect(addressAllowed('203.0.113.5', ['203.0.113.5'])).toBe(true);
    expect(addressAllowed('2001:db8::9', ['2001:db8::/32'])).toBe(true);
    expect(addressAllowed('192.0.2.1', ['192.0.2.0/33', 'not-an-address', ''])).toBe(false);
  });
});

describe('inbound admission', () => {
  it('accepts a trunk’s number from its allowed addresses, with the trunk and the number', () => {
    const admission = new InboundAdmission(() => [byAddress], digest);
    expect(admission.admit(invite('sip:+15550001@198.51.100.7'), from('192.0.2.10'))).toEqual({
      verdict: 'accept',
      value: { trunk: 'trunk-addr', calledNumber: '+15550001' },
    });
  });

  it('refuses alike an unknown source and a number that is not the trunk’s when no trunk has a username', () => {
    const admission = new InboundAdmission(() => [byAddress], digest);
    expect(admission.admit(invite('sip:+15550001@198.51.100.7'), from('203.0.113.5'))).toEqual({ verdict: 'refuse' });
    expect(admission.admit(invite('sip:+15559999@198.51.100.7'), from('192.0.2.10'))).toEqual({ verdict: 'refuse' });
  });

  it('challenges an unknown source whatever it calls when some trunk has a username, then admits the right answer', () => {
    const admission = new InboundAdmission(() => [byAddress, byPassword], digest);
    for (const number of ['+15550002', '+15559999']) {
      const verdict = admission.admit(invite(`sip:${number}@198.51.100.7`), from('203.0.113.5'));
      expect(verdict).toMatchObject({ verdict: 'challenge', status: 401 });
    }
    const challenge = admission.admit(invite('sip:+15550002@198.51.100.7'), from('203.0.113.5'));
    if (challenge.verdict !== 'challenge') throw new Error('expected a challenge');
    const uri = 'sip:+15550002@198.51.100.7';
    const answer = (password: string) =>
      answerDigestChallenge(
        challenge.challenges,
        { method: 'INVITE', uri },
        { username: 'pbx', password },
        { cnonce: 'x' },
      )!;
    expect(admission.admit(invite(uri, [`Authorization: ${answer('pbx-secret')}`]), from('203.0.113.5'))).toEqual({
      verdict: 'accept',
      value: { trunk: 'trunk-pass', calledNumber: '+15550002' },
    });
    expect(admission.admit(invite(uri, [`Authorization: ${answer('wrong')}`]), from('203.0.113.5'))).toEqual({
      verdict: 'refuse',
    });
  });

  it('refuses right credentials for a number that is not that trunk’s', () => {
    const admission = new InboundAdmission(() => [byAddress, byPassword], digest);
    const challenge = admission.admit(invite('sip:+15550001@198.51.100.7'), from('203.0.113.5'));
    if (challenge.verdict !== 'challenge') throw new Error('expected a challenge');
    const uri = 'sip:+15550001@198.51.100.7';
    const answer = answerDigestChallenge(
      challenge.challenges,
      { method: 'INVITE', uri },
      { username: 'pbx', password: 'pbx-secret' },
      { cnonce: 'x' },
    )!;
    expect(admission.admit(invite(uri, [`Proxy-Authorization: ${answer}`]), from('203.0.113.5'))).toEqual({
      verdict: 'refuse',
    });
  });
});
