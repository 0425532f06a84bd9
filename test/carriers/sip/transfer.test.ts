// SIP transfers (carriers/sip/dialer.ts, refer.ts, bridge.ts) over a real user agent on loopback UDP, the trunk's
// far side a scripted peer on its own socket: REFER and its NOTIFYs for a cold transfer, a second INVITE and the
// media relayed between the legs for a warm one.
import { createSocket, type Socket } from 'node:dgram';
import { once } from 'node:events';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { CallTransport } from '../../../src/call/transport.ts';
import { NoCarrierDialer } from '../../../src/carriers/carriers.ts';
import { DigestServer } from '../../../src/carriers/sip/digest.ts';
import { REFER_GRACE_MS, SipDialer, type SipDialOutcomes } from '../../../src/carriers/sip/dialer.ts';
import { header, responseTo, type SipRequest, type SipResponse } from '../../../src/carriers/sip/message.ts';
import { sipfragStatus } from '../../../src/carriers/sip/refer.ts';
import { parseRtp, writeRtp } from '../../../src/carriers/sip/rtp-packet.ts';
import type { SipCall } from '../../../src/carriers/sip/user-agent.ts';
import { EgressPolicy } from '../../../src/net/egress.ts';
import { NoTransferError } from '../../../src/records/dialer.ts';
import type { OwnedSipTrunk } from '../../../src/sip-trunks/repository.ts';
import { loopbackUserAgent, requestText, udpPeer, until, type FarPeer } from '../../helpers/sip-peer.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const TRUNK_NUMBER = '+15550100001';
const CALLEE = '+15550199999';
const DESK = '+15550177777';
const RING_TIMEOUT_MS = 5_000;

const sdp = (port: number) =>
  [
    'v=0',
    'o=- 1 1 IN IP4 127.0.0.1',
    's=-',
    'c=IN IP4 127.0.0.1',
    't=0 0',
    `m=audio ${port} RTP/AVP 0`,
    'a=rtpmap:0 PCMU/8000',
    '',
  ].join('\r\n');

// A range no other SIP test file binds (they run in parallel).
let rtpLow = 47600;

const requests = (far: FarPeer, method: string) =>
  far.received.filter((m): m is SipRequest => m.kind === 'request' && m.method === method);
const responses = (far: FarPeer, method: string) =>
  far.received.filter((m): m is SipResponse => m.kind === 'response' && header(m, 'cseq')?.endsWith(method) === true);

/** The SIP dialer over a real user agent, a call it placed answered by the far peer; reports as outcomes get them. */
async function answeredCall(
  o: {
    credentials?: { username: string; password: string };
    rtpPort?: number;
    /** Inbound calls the user agent answers land here (it refuses them when absent). */
    inbound?: SipCall[];
  } = {},
) {
  const { ua, wire, timers, ports } = await loopbackUserAgent<string>({
    rtpPorts: { low: rtpLow, high: rtpLow + 9 },
    admit: () => (o.inbound ? { verdict: 'accept', value: 'trunk_1' } : { verdict: 'refuse' }),
    onCall: (call) => o.inbound?.push(call),
    cleanups,
  });
  rtpLow += 10;
  const far = await udpPeer(() => wire.address().udp!);
  cleanups.push(() => far.close());
  const held: OwnedSipTrunk = {
    orgId: 'acme',
    trunk: {
      sip_trunk_id: 'trunk_1',
      name: 'carrier',
      numbers: [TRUNK_NUMBER],
      inbound: { allowed_addresses: ['127.0.0.1/32'] },
      outbound: { address: `127.0.0.1:${far.port}`, transport: 'udp', ...o.credentials },
      created_at: 0,
      updated_at: 0,
    },
  };
  const seen = {
    answered: [] as CallTransport[],
    reports: [] as string[],
    returned: [] as { secret: string; line: CallTransport }[],
  };
  const outcomes: SipDialOutcomes = {
    dialing: async () => undefined,
    answered: async (_org, _call, line) => void seen.answered.push(line),
    noAnswer: async (callId) => void seen.reports.push(`no answer ${callId}`),
    failed: async (callId, message) => void seen.reports.push(`dial failed ${callId}: ${message}`),
    transferAnswered: (callId) => void seen.reports.push(`answered ${callId}`),
    transferFailed: (callId, status) => {
      seen.reports.push(`failed ${callId} ${status}`);
      return 'back-secret';
    },
    returnStream: (_callId, secret, line) => {
      seen.returned.push({ secret, line });
      return true;
    },
    consultFailed: (callId, status) => void seen.reports.push(`consult failed ${callId} ${status}`),
    carrierEnded: async (callId) => void seen.reports.push(`ended ${callId}`),
  };
  const sip = new SipDialer({
    trunks: {
      byNumber: async (number) => (held.trunk.numbers.includes(number) ? held : undefined),
      anyWithCredentials: async () => false,
    },
    next: new NoCarrierDialer(),
    dial: (d) => ua!.dial(d),
    publicHost: '127.0.0.1',
    ringTimeoutMs: RING_TIMEOUT_MS,
    timers,
    udpListening: true,
    egress: new EgressPolicy(['127.0.0.0/8']),
    outcomes: () => outcomes,
    log: pino({ level: 'silent' }),
  });
  cleanups.push(() => {
    for (const line of [...seen.answered, ...seen.returned.map((r) => r.line)]) line.close('agent_hangup');
  });
  await sip.dial({
    orgId: 'acme',
    callId: 'call_1',
    from: TRUNK_NUMBER,
    to: CALLEE,
    presentationNumber: null,
    agent: {} as never,
    streamSecret: 'secret',
  });
  await until(() => requests(far, 'INVITE').length === 1, 'the INVITE');
  const invite = requests(far, 'INVITE')[0]!;
  far.send(
    responseTo(invite, 200, 'OK', {
      toTag: 'callee',
      headers: [{ name: 'contact', value: `<sip:callee@127.0.0.1:${far.port}>` }],
      body: sdp(o.rtpPort ?? 40020),
    }),
  );
  await until(() => seen.answered.length === 1, 'the answer');
  let seq = 1;
  /** A request the far side sends inside the call's dialog. */
  const inDialog = (method: string, extra: string[], body = '') =>
    far.send(
      requestText({
        method,
        uri: `sip:127.0.0.1:${wire.address().udp}`,
        branch: `z9hG4bKfar${method}${seq}`,
        viaPort: far.port,
        callId: header(invite, 'call-id')!,
        cseq: seq++,
        fromTag: 'callee',
        to: header(invite, 'from')!,
        extra,
        body,
      }),
    );
  const notify = (frag: string, state: 'active' | 'terminated') =>
    inDialog(
      'NOTIFY',
      [
        'Event: refer',
        `Subscription-State: ${state === 'active' ? 'active;expires=60' : 'terminated;reason=noresource'}`,
        'Content-Type: message/sipfrag;version=2.0',
        `Contact: <sip:callee@127.0.0.1:${far.port}>`,
      ],
      `${frag}\r\n`,
    );
  return { sip, far, timers, seen, held, invite, inDialog, notify, ports, sipPort: wire.address().udp! };
}

const transferRequest = { callId: 'call_1', carrierCallId: 'x', to: DESK, from: TRUNK_NUMBER };

describe('a sipfrag body', () => {
  it('is read for the status line of the referenced request', () => {
    expect(sipfragStatus('SIP/2.0 200 OK\r\n')).toEqual({ status: 200, reason: 'OK' });
    expect(sipfragStatus('SIP/2.0 486 Busy Here\r\nContent-Length: 0\r\n')).toEqual({
      status: 486,
      reason: 'Busy Here',
    });
    expect(sipfragStatus('SIP/2.0 100\r\n')).toEqual({ status: 100, reason: '' });
    expect(sipfragStatus('INVITE sip:x SIP/2.0')).toBeUndefined();
  });
});

describe('SIP cold transfer (REFER)', () => {
  it('REFERs in the call’s dialog to sip:<transfer_to>@<trunk outbound address>, answers a digest challenge with the trunk’s credentials, and a 200 sipfrag ends the call call_transfer', async () => {
    const digest = new DigestServer({
      algorithms: ['MD5'],
      key: Buffer.alloc(32, 3),
      realm: 'carrier.example',
      clock: { now: () => 1_000 },
      random: (bytes) => 'ab'.repeat(bytes),
    });
    const { sip, far, seen, invite, notify } = await answeredCall({
      credentials: { username: 'acct', password: 'trunk-secret' },
    });
    const started = sip.transfer(transferRequest);
    await until(() => requests(far, 'REFER').length === 1, 'the REFER');
    const refer = requests(far, 'REFER')[0]!;
    expect(refer.uri).toBe(`sip:callee@127.0.0.1:${far.port}`);
    expect(header(refer, 'call-id')).toBe(header(invite, 'call-id'));
    expect(header(refer, 'to')).toMatch(/;tag=callee$/);
    expect(header(refer, 'refer-to')).toBe(`<sip:${DESK}@127.0.0.1:${far.port}>`);
    expect(header(refer, 'referred-by')).toBe(`<sip:${TRUNK_NUMBER}@127.0.0.1>`);
    far.send(
      responseTo(refer, 407, 'Proxy Authentication Required', {
        headers: digest.challenge().map((value) => ({ name: 'proxy-authenticate', value })),
      }),
    );
    await until(() => requests(far, 'REFER').length === 2, 'the REFER with credentials');
    const second = requests(far, 'REFER')[1]!;
    expect(
      digest.verify(second, header(second, 'proxy-authorization'), (u) => (u === 'acct' ? 'trunk-secret' : undefined)),
    ).toEqual({ ok: true, username: 'acct' });
    far.send(responseTo(second, 202, 'Accepted'));
    await started;
    notify('SIP/2.0 100 Trying', 'active');
    await until(() => responses(far, 'NOTIFY').length === 1, 'the first NOTIFY’s answer');
    expect(seen.reports).toEqual([]);
    notify('SIP/2.0 200 OK', 'terminated');
    await until(() => responses(far, 'NOTIFY').length === 2, 'the last NOTIFY’s answer');
    expect(responses(far, 'NOTIFY').map((r) => r.status)).toEqual([200, 200]);
    expect(seen.reports).toEqual(['answered call_1']);
    // The session ends (call_transfer) and closes its line: BYE, as the far side sent none.
    seen.answered[0]!.close('call_transfer');
    await until(() => requests(far, 'BYE').length === 1, 'the BYE');
  });

  it('gives the caller’s same line back to the session when the NOTIFY says the destination was busy, and sends no BYE', async () => {
    const { sip, far, seen, notify } = await answeredCall();
    const started = sip.transfer(transferRequest);
    await until(() => requests(far, 'REFER').length === 1, 'the REFER');
    far.send(responseTo(requests(far, 'REFER')[0]!, 202, 'Accepted'));
    await started;
    notify('SIP/2.0 486 Busy Here', 'terminated');
    await until(() => seen.returned.length === 1, 'the line back');
    expect(seen.reports).toEqual(['failed call_1 busy']);
    expect(seen.returned[0]).toEqual({ secret: 'back-secret', line: seen.answered[0] });
    await new Promise((r) => setTimeout(r, 30));
    expect(requests(far, 'BYE')).toEqual([]);
  });

  it('throws when the far side refuses the REFER, so the caller stays with the agent, and reports nothing', async () => {
    const { sip, far, seen } = await answeredCall();
    const started = sip.transfer(transferRequest);
    await until(() => requests(far, 'REFER').length === 1, 'the REFER');
    far.send(responseTo(requests(far, 'REFER')[0]!, 603, 'Decline'));
    await expect(started).rejects.toThrow('The far side refused the transfer (SIP 603 Decline).');
    expect(seen.reports).toEqual([]);
  });

  it('takes no final NOTIFY within the ring timeout (and its grace) as nobody answering, and answers a late one 481', async () => {
    const { sip, far, seen, timers, notify } = await answeredCall();
    const started = sip.transfer(transferRequest);
    await until(() => requests(far, 'REFER').length === 1, 'the REFER');
    far.send(responseTo(requests(far, 'REFER')[0]!, 202, 'Accepted'));
    await started;
    timers.advance(RING_TIMEOUT_MS + REFER_GRACE_MS - 1);
    await new Promise((r) => setTimeout(r, 20));
    expect(seen.reports).toEqual([]);
    timers.advance(1);
    await until(() => seen.returned.length === 1, 'the line back');
    expect(seen.reports).toEqual(['failed call_1 no-answer']);
    notify('SIP/2.0 200 OK', 'terminated');
    await until(() => responses(far, 'NOTIFY').length === 1, 'the late NOTIFY’s answer');
    expect(responses(far, 'NOTIFY')[0]!.status).toBe(481);
    expect(seen.reports).toEqual(['failed call_1 no-answer']);
  });

  it('reports the caller’s BYE during the transfer as the call ending, not as the transfer connecting', async () => {
    const { sip, far, seen, inDialog } = await answeredCall();
    const started = sip.transfer(transferRequest);
    await until(() => requests(far, 'REFER').length === 1, 'the REFER');
    far.send(responseTo(requests(far, 'REFER')[0]!, 202, 'Accepted'));
    await started;
    inDialog('BYE', []);
    await until(() => seen.reports.length === 1, 'the report');
    expect(seen.reports).toEqual(['ended call_1']);
  });

  it('refuses, with NoTransferError, a transfer through a trunk that has no outbound side, sending no REFER', async () => {
    const { sip, far, held } = await answeredCall();
    held.trunk = { ...held.trunk, outbound: undefined };
    const refused = await sip.transfer(transferRequest).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(NoTransferError);
    expect((refused as Error).message).toMatch(/trunk_1 has no outbound side/);
    await new Promise((r) => setTimeout(r, 30));
    expect(requests(far, 'REFER')).toEqual([]);
  });

  it('answers a NOTIFY with no REFER under way 481, and one of another event package 489', async () => {
    const { sip, far, notify, inDialog } = await answeredCall();
    notify('SIP/2.0 200 OK', 'terminated');
    await until(() => responses(far, 'NOTIFY').length === 1, 'the NOTIFY’s answer');
    expect(responses(far, 'NOTIFY')[0]!.status).toBe(481);
    const started = sip.transfer(transferRequest);
    await until(() => requests(far, 'REFER').length === 1, 'the REFER');
    far.send(responseTo(requests(far, 'REFER')[0]!, 202, 'Accepted'));
    await started;
    inDialog('NOTIFY', ['Event: presence', 'Subscription-State: active'], '');
    await until(() => responses(far, 'NOTIFY').length === 2, 'the second NOTIFY’s answer');
    expect(responses(far, 'NOTIFY')[1]!.status).toBe(489);
  });

  it('takes the far side’s BYE as the transfer going through when it accepted the REFER with Refer-Sub: false', async () => {
    const { sip, far, seen, inDialog } = await answeredCall();
    const started = sip.transfer(transferRequest);
    await until(() => requests(far, 'REFER').length === 1, 'the REFER');
    far.send(responseTo(requests(far, 'REFER')[0]!, 200, 'OK', { headers: [{ name: 'refer-sub', value: 'false' }] }));
    await started;
    inDialog('BYE', []);
    await until(() => seen.reports.length === 1, 'the report');
    expect(seen.reports).toEqual(['answered call_1']);
  });

  it('transfers an inbound call the dialer adopted through the trunk it came in on, REFER to the caller’s Contact', async () => {
    const inbound: SipCall[] = [];
    const { sip, far, seen, sipPort } = await answeredCall({ inbound });
    far.send(
      requestText({
        method: 'INVITE',
        uri: `sip:${TRUNK_NUMBER}@127.0.0.1:${sipPort}`,
        branch: 'z9hG4bKinbound',
        viaPort: far.port,
        callId: 'inbound-1@far',
        fromTag: 'caller',
        to: `<sip:${TRUNK_NUMBER}@127.0.0.1>`,
        extra: [`Contact: <sip:caller@127.0.0.1:${far.port}>`, 'Content-Type: application/sdp'],
        body: sdp(40040),
      }),
    );
    await until(() => inbound.length === 1, 'the inbound call');
    const line = sip.adopt('call_in', 'acme', TRUNK_NUMBER, inbound[0]!);
    cleanups.push(() => line.close('agent_hangup'));
    expect(line.carrierCallId).toBe('inbound-1@far');
    const started = sip.transfer({ ...transferRequest, callId: 'call_in' });
    await until(() => requests(far, 'REFER').length === 1, 'the REFER');
    const refer = requests(far, 'REFER')[0]!;
    expect(refer.uri).toBe(`sip:caller@127.0.0.1:${far.port}`);
    expect(header(refer, 'call-id')).toBe('inbound-1@far');
    expect(header(refer, 'to')).toMatch(/;tag=caller$/);
    expect(header(refer, 'refer-to')).toBe(`<sip:${DESK}@127.0.0.1:${far.port}>`);
    far.send(responseTo(refer, 202, 'Accepted'));
    await started;
    far.send(
      requestText({
        method: 'NOTIFY',
        uri: `sip:127.0.0.1:${sipPort}`,
        branch: 'z9hG4bKinnotify',
        viaPort: far.port,
        callId: 'inbound-1@far',
        cseq: 2,
        fromTag: 'caller',
        to: header(refer, 'from')!,
        extra: ['Event: refer', 'Subscription-State: terminated', 'Content-Type: message/sipfrag'],
        body: 'SIP/2.0 200 OK\r\n',
      }),
    );
    await until(() => seen.reports.includes('answered call_in'), 'the report');
  });
});

/** A far RTP endpoint on its own socket. */
async function rtpPeer(): Promise<{ socket: Socket; port: number; heard: Buffer[] }> {
  const socket = createSocket('udp4');
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  const heard: Buffer[] = [];
  socket.on('message', (datagram: Buffer) => heard.push(datagram));
  cleanups.push(() => socket.close());
  return { socket, port: socket.address().port, heard };
}

/** The port the service offered in an INVITE's SDP. */
const offeredPort = (invite: SipRequest) => Number(/^m=audio (\d+)/m.exec(invite.body)![1]);

describe('SIP warm transfer (a second INVITE, bridged in the service)', () => {
  it('calls the destination through the trunk, hands its line over with the stream secret, then relays each leg’s audio to the other until one hangs up', async () => {
    const caller = await rtpPeer();
    const desk = await rtpPeer();
    const { sip, far, seen, timers, invite, ports } = await answeredCall({ rtpPort: caller.port });
    const { carrierCallId } = await sip.consult({
      callId: 'call_1',
      to: DESK,
      from: TRUNK_NUMBER,
      streamSecret: 'leg-secret',
    });
    await until(() => requests(far, 'INVITE').length === 2, 'the second INVITE');
    const second = requests(far, 'INVITE')[1]!;
    expect(second.uri).toBe(`sip:${DESK}@127.0.0.1:${far.port}`);
    expect(header(second, 'call-id')).toBe(carrierCallId);
    expect(header(second, 'from')).toMatch(new RegExp(`^<sip:\\${TRUNK_NUMBER}@127\\.0\\.0\\.1>;tag=`));
    far.send(
      responseTo(second, 200, 'OK', {
        toTag: 'desk',
        headers: [{ name: 'contact', value: `<sip:desk@127.0.0.1:${far.port}>` }],
        body: sdp(desk.port),
      }),
    );
    await until(() => seen.returned.length === 1, 'the second leg’s line');
    expect(seen.returned[0]!.secret).toBe('leg-secret');
    expect(ports.used).toBe(2);

    await sip.bridge({ callId: 'call_1', carrierCallId: 'x', consultCarrierCallId: carrierCallId });
    // The session letting go of its lines (the call ends call_transfer) leaves the bridge up: no BYE.
    seen.answered[0]!.close('call_transfer');
    seen.returned[0]!.line.close('call_transfer');
    // The desk speaks: its packets come out at the caller's port, from the caller leg's own port.
    for (let i = 0; i < 10; i++)
      desk.socket.send(
        writeRtp(
          { payloadType: 0, marker: i === 0, sequence: 100 + i, timestamp: i * 160, ssrc: 9 },
          new Uint8Array(160).fill(0x10),
        ),
        offeredPort(second),
        '127.0.0.1',
      );
    for (let i = 0; i < 50 && caller.heard.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 5));
      timers.advance(20);
    }
    expect(caller.heard.length).toBeGreaterThan(0);
    const relayed = parseRtp(caller.heard[0]!)!;
    expect(relayed.payloadType).toBe(0);
    expect(relayed.payload.length).toBe(160);
    expect(requests(far, 'BYE')).toEqual([]);

    // The desk hangs up: the caller's leg gets BYE, and both ports are free.
    far.send(
      requestText({
        method: 'BYE',
        uri: `sip:127.0.0.1`,
        branch: 'z9hG4bKdeskbye',
        viaPort: far.port,
        callId: carrierCallId,
        cseq: 2,
        fromTag: 'desk',
        to: header(second, 'from')!,
      }),
    );
    await until(() => requests(far, 'BYE').length === 1, 'the caller’s BYE');
    expect(header(requests(far, 'BYE')[0]!, 'call-id')).toBe(header(invite, 'call-id'));
    await until(() => ports.used === 0, 'the ports released');
    expect(seen.reports).toEqual([]);
  });

  it('hangs both bridged legs up with BYE when the service stops, freeing their ports', async () => {
    const { sip, far, seen, invite, ports } = await answeredCall();
    const { carrierCallId } = await sip.consult({
      callId: 'call_1',
      to: DESK,
      from: TRUNK_NUMBER,
      streamSecret: 'leg-secret',
    });
    await until(() => requests(far, 'INVITE').length === 2, 'the second INVITE');
    const second = requests(far, 'INVITE')[1]!;
    far.send(
      responseTo(second, 200, 'OK', {
        toTag: 'desk',
        headers: [{ name: 'contact', value: `<sip:desk@127.0.0.1:${far.port}>` }],
        body: sdp(40050),
      }),
    );
    await until(() => seen.returned.length === 1, 'the second leg’s line');
    await sip.bridge({ callId: 'call_1', carrierCallId: 'x', consultCarrierCallId: carrierCallId });
    sip.closeBridges();
    await until(() => requests(far, 'BYE').length === 2, 'both BYEs');
    expect(
      requests(far, 'BYE')
        .map((bye) => header(bye, 'call-id'))
        .sort(),
    ).toEqual([header(invite, 'call-id'), carrierCallId].sort());
    expect(ports.used).toBe(0);
  });

  it('reports a second leg the destination answers busy as the consult failing: the caller stays with the agent', async () => {
    const { sip, far, seen } = await answeredCall();
    await sip.consult({ callId: 'call_1', to: DESK, from: TRUNK_NUMBER, streamSecret: 'leg-secret' });
    await until(() => requests(far, 'INVITE').length === 2, 'the second INVITE');
    far.send(responseTo(requests(far, 'INVITE')[1]!, 486, 'Busy Here', { toTag: 'desk' }));
    await until(() => seen.reports.length === 1, 'the report');
    expect(seen.reports).toEqual(['consult failed call_1 busy']);
    expect(seen.returned).toEqual([]);
  });
});
