import { EgressPolicy } from '../../../src/net/egress.ts';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { NoCarrierDialer } from '../../../src/carriers/carriers.ts';
import { DigestServer } from '../../../src/carriers/sip/digest.ts';
import { dialEnding, hostPortOf, SipDialer, type SipDialOutcomes } from '../../../src/carriers/sip/dialer.ts';
import { header, responseTo, type SipRequest } from '../../../src/carriers/sip/message.ts';
import type { CallTransport } from '../../../src/call/transport.ts';
import { ApiError } from '../../../src/errors.ts';
import { NoTransferError, type DialRequest, type Dialer, type TransferRequest } from '../../../src/records/dialer.ts';
import type { OwnedSipTrunk } from '../../../src/sip-trunks/repository.ts';
import type { SipTrunk } from '../../../src/sip-trunks/schema.ts';
import { loopbackUserAgent, udpPeer, until } from '../../helpers/sip-peer.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const TRUNK_NUMBER = '+15550100001';
const CALLEE = '+15550199999';
const RING_TIMEOUT_MS = 5_000;

const answerSdp = [
  'v=0',
  'o=- 1 1 IN IP4 127.0.0.1',
  's=-',
  'c=IN IP4 127.0.0.1',
  't=0 0',
  'm=audio 40020 RTP/AVP 0',
  'a=rtpmap:0 PCMU/8000',
  '',
].join('\r\n');

function trunk(outbound: SipTrunk['outbound']): SipTrunk {
  return {
    sip_trunk_id: 'trunk_1',
    name: 'carrier',
    numbers: [TRUNK_NUMBER],
    inbound: { allowed_addresses: ['127.0.0.1/32'] },
    outbound,
    created_at: 0,
    updated_at: 0,
  };
}

// A range no other SIP test file binds (they run in parallel).
let rtpLow = 47300;

/** The SIP dialer over a real user agent on loopback UDP; the trunk's far side is a scripted peer. */
async function dialer(
  o: {
    credentials?: { username: string; password: string };
    outbound?: false;
    next?: Dialer;
    egressAllow?: string[];
  } = {},
) {
  const { ua, wire, timers, ports } = await loopbackUserAgent<never>({
    rtpPorts: { low: rtpLow, high: rtpLow + 9 },
    admit: () => ({ verdict: 'refuse' }),
    onCall: () => {},
    cleanups,
  });
  rtpLow += 10;
  const far = await udpPeer(() => wire.address().udp!);
  cleanups.push(() => far.close());
  const held: OwnedSipTrunk = {
    orgId: 'acme',
    trunk: trunk(
      o.outbound === false ? undefined : { address: `127.0.0.1:${far.port}`, transport: 'udp', ...o.credentials },
    ),
  };
  const ended = {
    dialing: [] as [string, Record<string, string>][],
    answered: [] as CallTransport[],
    noAnswer: [] as string[],
    failed: [] as [string, string][],
    /** Transfer reports, in order, as the call outcomes get them. */
    reports: [] as string[],
    /** Lines handed back with a secret: the caller's after a failed transfer, or a second leg. */
    returned: [] as { secret: string; line: CallTransport }[],
  };
  const outcomes: SipDialOutcomes = {
    dialing: async (_org, callId, metadata) => void ended.dialing.push([callId, metadata]),
    answered: async (_org, _call, transport) => void ended.answered.push(transport),
    noAnswer: async (callId) => void ended.noAnswer.push(callId),
    failed: async (callId, message) => void ended.failed.push([callId, message]),
    transferAnswered: (callId) => void ended.reports.push(`answered ${callId}`),
    transferFailed: (callId, status) => {
      ended.reports.push(`failed ${callId} ${status}`);
      return 'back-secret';
    },
    returnStream: (_callId, secret, line) => {
      ended.returned.push({ secret, line });
      return true;
    },
    consultFailed: (callId, status) => void ended.reports.push(`consult failed ${callId} ${status}`),
    carrierEnded: async (callId) => void ended.reports.push(`ended ${callId}`),
  };
  const sip = new SipDialer({
    trunks: {
      byNumber: async (number) => (held.trunk.numbers.includes(number) ? held : undefined),
      anyWithCredentials: async () => false,
    },
    next: o.next ?? new NoCarrierDialer(),
    dial: (d) => ua!.dial(d),
    publicHost: '127.0.0.1',
    ringTimeoutMs: RING_TIMEOUT_MS,
    timers,
    udpListening: true,
    // The far side is on loopback, opened as a PBX on the operator's own network would be.
    egress: new EgressPolicy(o.egressAllow ?? ['127.0.0.0/8']),
    outcomes: () => outcomes,
    log: pino({ level: 'silent' }),
  });
  cleanups.push(() => {
    for (const transport of ended.answered) transport.close('agent_hangup');
  });
  cleanups.push(() => {
    for (const { line } of ended.returned) line.close('agent_hangup');
  });
  return { sip, far, timers, ports, ended, held };
}

const request = (o: Partial<DialRequest> = {}): DialRequest => ({
  orgId: 'acme',
  callId: 'call_1',
  from: TRUNK_NUMBER,
  to: CALLEE,
  presentationNumber: null,
  agent: {} as DialRequest['agent'],
  streamSecret: 'secret',
  ...o,
});

describe('how a SIP dial that did not connect ends the call', () => {
  it('ends 486 and 600 as busy, with the SIP status in the message', () => {
    expect(dialEnding({ outcome: 'rejected', status: 486, reason: 'Busy Here' }, false)).toEqual({
      kind: 'failed',
      message: 'The callee was busy (SIP 486 Busy Here).',
    });
    expect(dialEnding({ outcome: 'rejected', status: 600, reason: 'Busy Everywhere' }, false)).toMatchObject({
      kind: 'failed',
      message: expect.stringMatching(/busy \(SIP 600 Busy Everywhere\)/),
    });
  });

  it('ends any other final answer as a refusal naming its SIP status', () => {
    expect(dialEnding({ outcome: 'rejected', status: 404, reason: 'Not Found' }, false)).toEqual({
      kind: 'failed',
      message: 'The SIP trunk refused the call (SIP 404 Not Found).',
    });
    expect(dialEnding({ outcome: 'timeout' }, false)).toEqual({
      kind: 'failed',
      message: 'The SIP trunk never answered the INVITE.',
    });
  });

  it('ends a dial this side cancelled at the ring timeout as no answer, whatever the far side said after', () => {
    expect(dialEnding({ outcome: 'rejected', status: 487, reason: 'Request Terminated' }, true)).toEqual({
      kind: 'no_answer',
    });
    expect(dialEnding({ outcome: 'timeout' }, true)).toEqual({ kind: 'no_answer' });
  });
});

describe('a trunk outbound address', () => {
  it('is host and port, 5060 when none is given, an IPv6 address in brackets', () => {
    expect(hostPortOf('sip.carrier.example')).toEqual({ host: 'sip.carrier.example', port: 5060 });
    expect(hostPortOf('203.0.113.5:5080')).toEqual({ host: '203.0.113.5', port: 5080 });
    expect(hostPortOf('[2001:db8::1]:5070')).toEqual({ host: '2001:db8::1', port: 5070 });
    expect(hostPortOf('[2001:db8::1]')).toEqual({ host: '2001:db8::1', port: 5060 });
  });
});

describe('SIP dialer', () => {
  it('INVITEs sip:<call_to>@<outbound address> from the trunk number, puts its Call-ID and the trunk in the record’s metadata, answers an MD5 digest challenge with the trunk’s credentials, and hands the answered call’s transport over', async () => {
    const digest = new DigestServer({
      algorithms: ['MD5'],
      key: Buffer.alloc(32, 3),
      realm: 'carrier.example',
      clock: { now: () => 1_000 },
      random: (bytes) => 'ab'.repeat(bytes),
    });
    const { sip, far, ended, held } = await dialer({ credentials: { username: 'acct', password: 'trunk-secret' } });
    const placed = await sip.dial(request());
    await until(() => far.received.length === 1, 'the INVITE');
    const invite = far.received[0] as SipRequest;
    expect(placed).toEqual({ status: 'dialing', carrierCallId: header(invite, 'call-id') });
    expect(ended.dialing).toEqual([
      [request().callId, { sip_call_id: header(invite, 'call-id'), sip_trunk_id: held.trunk.sip_trunk_id }],
    ]);
    expect(invite.uri).toBe(`sip:${CALLEE}@127.0.0.1:${far.port}`);
    expect(header(invite, 'from')).toMatch(new RegExp(`^<sip:\\${TRUNK_NUMBER}@127\\.0\\.0\\.1>;tag=`));
    far.send(
      responseTo(invite, 407, 'Proxy Authentication Required', {
        toTag: 'p',
        headers: digest.challenge().map((value) => ({ name: 'proxy-authenticate', value })),
      }),
    );
    await until(() => far.received.filter((m) => m.kind === 'request' && m.method === 'INVITE').length === 2);
    const second = far.received.filter((m) => m.kind === 'request' && m.method === 'INVITE')[1] as SipRequest;
    expect(header(second, 'proxy-authorization')).toMatch(/algorithm=MD5/);
    expect(
      digest.verify(second, header(second, 'proxy-authorization'), (u) => (u === 'acct' ? 'trunk-secret' : undefined)),
    ).toEqual({ ok: true, username: 'acct' });
    far.send(responseTo(second, 180, 'Ringing', { toTag: 'callee' }));
    far.send(
      responseTo(second, 200, 'OK', {
        toTag: 'callee',
        headers: [{ name: 'contact', value: `<sip:callee@127.0.0.1:${far.port}>` }],
        body: answerSdp,
      }),
    );
    await until(() => ended.answered.length === 1, 'the answer');
    expect(ended.failed).toEqual([]);
    // The agent's hang-up (the session closing the transport) sends BYE.
    ended.answered[0]!.close('agent_hangup');
    await until(() => far.received.some((m) => m.kind === 'request' && m.method === 'BYE'), 'the BYE');
  });

  it('sends CANCEL once RING_TIMEOUT_MS passes with the callee ringing, and ends the call dial_no_answer', async () => {
    const { sip, far, timers, ended, ports } = await dialer();
    await sip.dial(request());
    await until(() => far.received.length === 1, 'the INVITE');
    const invite = far.received[0] as SipRequest;
    far.send(responseTo(invite, 180, 'Ringing', { toTag: 'r' }));
    await new Promise((r) => setTimeout(r, 30));
    timers.advance(RING_TIMEOUT_MS - 1);
    expect(far.received.some((m) => m.kind === 'request' && m.method === 'CANCEL')).toBe(false);
    timers.advance(1);
    await until(() => far.received.some((m) => m.kind === 'request' && m.method === 'CANCEL'), 'the CANCEL');
    const cancel = far.received.find((m) => m.kind === 'request' && m.method === 'CANCEL') as SipRequest;
    far.send(responseTo(cancel, 200, 'OK'));
    far.send(responseTo(invite, 487, 'Request Terminated', { toTag: 'r' }));
    await until(() => ended.noAnswer.length === 1, 'the ending');
    expect(ended.noAnswer).toEqual(['call_1']);
    expect(ended.failed).toEqual([]);
    expect(ports.used).toBe(0);
  });

  it('ends a dial the trunk never answers at all as dial_failed, not dial_no_answer, once the INVITE times out', async () => {
    const { sip, far, timers, ended } = await dialer();
    await sip.dial(request());
    await until(() => far.received.length === 1, 'the INVITE');
    timers.advance(RING_TIMEOUT_MS);
    timers.advance(32_000);
    await until(() => ended.failed.length === 1, 'the ending');
    expect(ended.failed).toEqual([['call_1', 'The SIP trunk never answered the INVITE.']]);
    expect(ended.noAnswer).toEqual([]);
    expect(far.received.some((m) => m.kind === 'request' && m.method === 'CANCEL')).toBe(false);
  });

  it('ends a call the callee answers 486 as dial_failed saying busy', async () => {
    const { sip, far, ended } = await dialer();
    await sip.dial(request());
    await until(() => far.received.length === 1, 'the INVITE');
    far.send(responseTo(far.received[0] as SipRequest, 486, 'Busy Here', { toTag: 'b' }));
    await until(() => ended.failed.length === 1, 'the ending');
    expect(ended.failed).toEqual([['call_1', 'The callee was busy (SIP 486 Busy Here).']]);
  });

  it('refuses a trunk at an internal address EGRESS_ALLOW does not open, as a tool’s URL is: dial_failed, no INVITE', async () => {
    const { sip, far } = await dialer({ egressAllow: [] });
    expect(await sip.dial(request())).toEqual({
      status: 'failed',
      reason: 'dial_failed',
      message: expect.stringMatching(
        /^The address of SIP trunk .* is not reachable from this service: an internal address \(EGRESS_ALLOW opens it\)\.$/,
      ),
    });
    await new Promise((r) => setTimeout(r, 30));
    expect(far.received).toEqual([]);
  });

  it('passes a number that is not on one of the organization’s trunks to the carriers after it', async () => {
    const { sip, far } = await dialer();
    const other = await sip.dial(request({ orgId: 'other-org' }));
    expect(other).toMatchObject({
      status: 'failed',
      reason: 'dial_failed',
      message: expect.stringMatching(/No carrier/),
    });
    const notTrunk = await sip.dial(request({ from: '+15550100777' }));
    expect(notTrunk).toMatchObject({ status: 'failed', message: expect.stringMatching(/No carrier/) });
    await new Promise((r) => setTimeout(r, 30));
    expect(far.received).toEqual([]);
  });

  it('refuses, before any record, a call from a trunk number whose trunk has no outbound side', async () => {
    const { sip } = await dialer({ outbound: false });
    const refused = await sip.checkFrom('acme', TRUNK_NUMBER).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ code: 'BAD_REQUEST', details: expect.stringMatching(/no outbound side/) });
    await expect(sip.checkFrom('other-org', TRUNK_NUMBER)).resolves.toBeUndefined();
  });

  it('leaves the carriers after it their cold and warm transfers for their own calls, and refuses them for a call still ringing', async () => {
    const handed: string[] = [];
    class TransferringCarrier extends NoCarrierDialer {
      async transfer(r: TransferRequest): Promise<void> {
        handed.push(`transfer ${r.callId}`);
      }
      async consult(r: { callId: string }): Promise<{ carrierCallId: string }> {
        handed.push(`consult ${r.callId}`);
        return { carrierCallId: 'CA-leg' };
      }
      async bridge(r: { callId: string }): Promise<void> {
        handed.push(`bridge ${r.callId}`);
      }
    }
    const { sip, far } = await dialer({ next: new TransferringCarrier() });
    const other = { callId: 'twilio_call', carrierCallId: 'CA1', to: CALLEE, from: null };
    await sip.transfer(other);
    await sip.consult({ callId: 'twilio_call', to: CALLEE, from: null, streamSecret: 's' });
    await sip.bridge({ callId: 'twilio_call', carrierCallId: 'CA1', consultCarrierCallId: 'CA-leg' });
    expect(handed).toEqual(['transfer twilio_call', 'consult twilio_call', 'bridge twilio_call']);
    await sip.dial(request());
    await until(() => far.received.length === 1, 'the INVITE');
    await expect(sip.transfer({ ...other, callId: 'call_1' })).rejects.toThrow(/before it is answered/);
    expect(handed).toHaveLength(3);
    // A call of a chain whose other carriers cannot transfer ends as a line without transfers does.
    await expect((await dialer()).sip.transfer(other)).rejects.toBeInstanceOf(NoTransferError);
  });
});
