import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { TransportHandlers } from '../../../src/call/transport.ts';
import { InboundAdmission } from '../../../src/carriers/sip/admission.ts';
import { DigestServer } from '../../../src/carriers/sip/digest.ts';
import { InviteFloodGuard } from '../../../src/carriers/sip/flood.ts';
import {
  header,
  headerFields,
  responseTo,
  type SipMessage,
  type SipRequest,
  type SipResponse,
} from '../../../src/carriers/sip/message.ts';
import { RtpPortPool } from '../../../src/carriers/sip/rtp-ports.ts';
import { parseSdp } from '../../../src/carriers/sip/sdp.ts';
import { cseqOf, tagOf, topVia, viaBranch } from '../../../src/carriers/sip/transactions.ts';
import {
  infoKey,
  SipUserAgent,
  type DialResult,
  type InviteAdmission,
  type SipCall,
} from '../../../src/carriers/sip/user-agent.ts';
import { SipSocketWire, type SipPeer, type SipWire } from '../../../src/carriers/sip/wire.ts';
import { ManualTimers } from '../../../src/timers.ts';
import { FUZZ_SEED, runs } from '../../helpers/fuzz.ts';
import { requestText, udpPeer, until, type FarPeer } from '../../helpers/sip-peer.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function offer(o: { direction?: string; port?: number; codecs?: string } = {}): string {
  return [
    'v=0',
    'o=- 1 1 IN IP4 127.0.0.1',
    's=-',
    'c=IN IP4 127.0.0.1',
    't=0 0',
    `m=audio ${o.port ?? 40000} RTP/AVP ${o.codecs ?? '0 8 101'}`,
    'a=rtpmap:0 PCMU/8000',
    'a=rtpmap:8 PCMA/8000',
    'a=rtpmap:101 telephone-event/8000',
    `a=${o.direction ?? 'sendrecv'}`,
    '',
  ].join('\r\n');
}

let rangeStart = 47500;

/** A user agent on a real UDP socket, with its own RTP range, counting random values and manual timers. */
async function agent<T = string>(
  admit: (invite: SipRequest, from: SipPeer) => InviteAdmission<T>,
  floodGuard?: InviteFloodGuard,
) {
  const timers = new ManualTimers(0);
  const ports = new RtpPortPool({ low: rangeStart, high: rangeStart + 9 }, '127.0.0.1');
  rangeStart += 10;
  const calls: { call: SipCall; admitted: T }[] = [];
  let ua: SipUserAgent<T> | undefined;
  const wire = await SipSocketWire.listen({
    udp: { host: '127.0.0.1', port: 0 },
    onMessage: (message, from) => ua!.receive(message, from),
  });
  cleanups.push(() => wire.close());
  const sent: SipMessage[] = [];
  const recording: SipWire = {
    send(message, to) {
      sent.push(message);
      wire.send(message, to);
    },
  };
  let n = 0;
  ua = new SipUserAgent<T>({
    wire: recording,
    timers,
    random: (bytes) => (n++).toString(16).padStart(bytes * 2, '0'),
    publicHost: '127.0.0.1',
    sentBy: () => `127.0.0.1:${wire.address().udp}`,
    ports,
    admit,
    floodGuard,
    // Longer than 64·T1, so the no-ACK test sees its own timer, not the media timeout's.
    mediaTimeoutMs: 60_000,
    onCall: (call, admitted) => calls.push({ call, admitted }),
    product: 'voice-agent-test',
  });
  cleanups.push(() => {
    for (const { call } of calls) call.transport.close('agent_hangup');
  });
  const far = await udpPeer(() => wire.address().udp!);
  cleanups.push(() => far.close());
  const farPeer: SipPeer = { transport: 'udp', address: '127.0.0.1', port: far.port };
  return { ua, timers, ports, calls, wire, sent, far, farPeer };
}

const accept = (): InviteAdmission<string> => ({ verdict: 'accept', value: 'trunk-1' });

function inviteFrom(far: FarPeer, o: { body?: string; branch?: string } = {}): string {
  return requestText({
    method: 'INVITE',
    branch: o.branch ?? 'z9hG4bKin1',
    viaPort: far.port,
    extra: [`Contact: <sip:far@127.0.0.1:${far.port}>`, 'Content-Type: application/sdp'],
    body: o.body ?? offer(),
  });
}

const statuses = (messages: SipMessage[]) => messages.map((m) => (m.kind === 'response' ? m.status : m.method));

function handlersOf(call: SipCall) {
  const log = { hangups: 0 };
  const handlers: TransportHandlers = { audio: () => {}, mark: () => {}, dtmf: () => {}, hangup: () => log.hangups++ };
  call.transport.attach(handlers);
  return log;
}

/** The far side's in-dialog request to the call the service answered (tags from the 200). */
function inDialog(far: FarPeer, ok: SipResponse, method: string, cseq: number, o: { body?: string; branch: string }) {
  return requestText({
    method,
    branch: o.branch,
    viaPort: far.port,
    cseq,
    to: header(ok, 'to')!,
    extra: [`Contact: <sip:far@127.0.0.1:${far.port}>`, ...(o.body ? ['Content-Type: application/sdp'] : [])],
    ...(o.body ? { body: o.body } : {}),
  });
}

async function answeredCall() {
  const a = await agent(accept);
  a.far.send(inviteFrom(a.far));
  await until(() => a.far.received.length === 3, '100, 180 and 200');
  const ok = a.far.received[2] as SipResponse;
  a.far.send(requestText({ method: 'ACK', branch: 'z9hG4bKack1', viaPort: a.far.port, to: header(ok, 'to')! }));
  return { ...a, ok, call: a.calls[0]!.call };
}

describe('SIP user agent, inbound', () => {
  it('answers an admitted INVITE 100, 180 and 200 with the SDP answer on a bound RTP port, and hands the call over', async () => {
    const { far, calls, ports, timers, sent } = await agent(accept);
    far.send(inviteFrom(far));
    await until(() => far.received.length === 3);
    expect(statuses(far.received)).toEqual([100, 180, 200]);
    const ok = far.received[2] as SipResponse;
    expect(tagOf(header(ok, 'to'))).toBe(tagOf(header(far.received[1]!, 'to')));
    expect(header(ok, 'content-type')).toBe('application/sdp');
    expect(header(ok, 'contact')).toMatch(/^<sip:127\.0\.0\.1:\d+>$/);
    const answer = parseSdp(ok.body);
    expect(ports.used).toBe(1);
    expect(answer.media[0]!.port % 2).toBe(0);
    expect(answer.media[0]!.formats).toEqual(['0', '101']);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.admitted).toBe('trunk-1');
    expect(calls[0]!.call.media.remote).toEqual({ address: '127.0.0.1', port: 40000 });
    far.send(requestText({ method: 'ACK', branch: 'z9hG4bKack1', viaPort: far.port, to: header(ok, 'to')! }));
    await new Promise((r) => setTimeout(r, 50));
    timers.advance(5000);
    expect(sent.filter((m) => m.kind === 'response' && m.status === 200)).toHaveLength(1);
  });

  it('refuses a source admission refuses with 403, binding no RTP port', async () => {
    const { far, calls, ports } = await agent(() => ({ verdict: 'refuse' }));
    far.send(inviteFrom(far));
    await until(() => far.received.length === 2);
    expect(statuses(far.received)).toEqual([100, 403]);
    expect(ports.used).toBe(0);
    expect(calls).toHaveLength(0);
  });

  it('challenges with 401 and one WWW-Authenticate per algorithm, binding no RTP port', async () => {
    const digest = new DigestServer({
      key: Buffer.alloc(32, 3),
      realm: 'r',
      clock: { now: () => 0 },
      random: () => 'ab',
    });
    const { far, ports } = await agent(() => ({ verdict: 'challenge', status: 401, challenges: digest.challenge() }));
    far.send(inviteFrom(far));
    await until(() => far.received.length === 2);
    expect(statuses(far.received)).toEqual([100, 401]);
    expect(headerFields(far.received[1]!, 'www-authenticate')).toHaveLength(2);
    expect(ports.used).toBe(0);
  });

  it('answers INVITEs beyond a source’s flood bound 503 with Retry-After, before admission and without a port', async () => {
    let admitted = 0;
    const guard = new InviteFloodGuard(new ManualTimers(0), { burst: 2, perSecond: 1 });
    const { far, ports } = await agent(() => {
      admitted++;
      return { verdict: 'refuse' };
    }, guard);
    for (const n of [1, 2, 3]) far.send(inviteFrom(far, { branch: `z9hG4bKfl${n}` }));
    await until(() => far.received.filter((m) => m.kind === 'response' && m.status >= 400).length === 3);
    const finals = far.received.filter((m): m is SipResponse => m.kind === 'response' && m.status >= 400);
    expect(finals.map((m) => m.status).sort()).toEqual([403, 403, 503]);
    expect(
      header(
        finals.find((m) => m.status === 503)!,
        'retry-after',
      ),
    ).toBe('1');
    expect(admitted).toBe(2);
    expect(ports.used).toBe(0);
  });

  it('answers an offer with no common codec 488 and gives the port back', async () => {
    const { far, ports, calls } = await agent(accept);
    far.send(inviteFrom(far, { body: offer({ codecs: '18' }) }));
    await until(() => far.received.length === 3);
    expect(statuses(far.received)).toEqual([100, 180, 488]);
    expect(ports.used).toBe(0);
    expect(calls).toHaveLength(0);
  });

  it('answers OPTIONS outside a call 200 with Allow, and a BYE for no call 481', async () => {
    const { far } = await agent(accept);
    far.send(requestText({ method: 'OPTIONS', branch: 'z9hG4bKo1', viaPort: far.port }));
    far.send(requestText({ method: 'BYE', branch: 'z9hG4bKb0', viaPort: far.port, to: '<sip:x@y>;tag=none' }));
    await until(() => far.received.length === 2);
    const byStatus = new Map(far.received.map((m) => [(m as SipResponse).status, m]));
    expect(header(byStatus.get(200)!, 'allow')).toContain('INVITE');
    expect(byStatus.has(481)).toBe(true);
  });

  it('on the far side’s BYE answers 200, ends the call and tells the session, and the port is given back on close', async () => {
    const { far, ok, call, ports } = await answeredCall();
    const log = handlersOf(call);
    far.send(inDialog(far, ok, 'BYE', 2, { branch: 'z9hG4bKbye1' }));
    await until(() => far.received.length === 4);
    expect((far.received[3] as SipResponse).status).toBe(200);
    expect(cseqOf(far.received[3]!)!.method).toBe('BYE');
    expect(call.ended).toBe('remote_bye');
    expect(log.hangups).toBe(1);
    call.transport.close('user_hangup');
    expect(ports.used).toBe(0);
    await new Promise((r) => setTimeout(r, 30));
    expect(statuses(far.received)).not.toContain('BYE');
  });

  it('answers a re-INVITE that holds the call recvonly from the same port, and one that resumes it sendrecv', async () => {
    const { far, ok, call } = await answeredCall();
    const firstPort = parseSdp(ok.body).media[0]!.port;
    far.send(inDialog(far, ok, 'INVITE', 2, { branch: 'z9hG4bKre1', body: offer({ direction: 'sendonly' }) }));
    await until(() => far.received.filter((m) => m.kind === 'response' && m.status === 200).length === 2);
    const held = far.received.at(-1) as SipResponse;
    expect(cseqOf(held)).toEqual({ number: 2, method: 'INVITE' });
    const heldSdp = parseSdp(held.body);
    expect(heldSdp.media[0]).toMatchObject({ port: firstPort, direction: 'recvonly' });
    expect(heldSdp.origin.sessionVersion).toBe('2');
    expect(call.media.onHold).toBe(true);
    far.send(requestText({ method: 'ACK', branch: 'z9hG4bKack2', viaPort: far.port, cseq: 2, to: header(ok, 'to')! }));
    far.send(inDialog(far, ok, 'INVITE', 3, { branch: 'z9hG4bKre2', body: offer({ port: 40002 }) }));
    await until(() => far.received.filter((m) => m.kind === 'response' && m.status === 200).length === 3);
    const resumed = parseSdp((far.received.at(-1) as SipResponse).body);
    expect(resumed.media[0]).toMatchObject({ port: firstPort, direction: 'sendrecv' });
    expect(call.media).toMatchObject({ onHold: false, remote: { address: '127.0.0.1', port: 40002 } });
  });

  it('hands the session a key pressed by SIP INFO (application/dtmf-relay), and answers it 200', async () => {
    const { far, ok, call } = await answeredCall();
    const digits: string[] = [];
    call.transport.attach({ audio: () => {}, mark: () => {}, dtmf: (key) => digits.push(key), hangup: () => {} });
    far.send(
      requestText({
        method: 'INFO',
        branch: 'z9hG4bKinfo1',
        viaPort: far.port,
        cseq: 2,
        to: header(ok, 'to')!,
        extra: ['Content-Type: application/dtmf-relay'],
        body: 'Signal=11\r\nDuration=160\r\n',
      }),
    );
    await until(() => far.received.some((m) => m.kind === 'response' && cseqOf(m)?.method === 'INFO'));
    expect(digits).toEqual(['#']);
    expect(infoKey('application/dtmf', '7')).toBe('7');
    expect(infoKey('application/dtmf-relay', 'Signal=X')).toBeUndefined();
    expect(infoKey('text/plain', 'Signal=1')).toBeUndefined();
  });

  it('answers a re-INVITE whose CSeq is not above the last 500', async () => {
    const { far, ok } = await answeredCall();
    far.send(inDialog(far, ok, 'INVITE', 1, { branch: 'z9hG4bKold', body: offer() }));
    await until(() => far.received.some((m) => m.kind === 'response' && m.status === 500));
  });

  it('sends BYE to the far side’s Contact when the session ends the call', async () => {
    const { far, ok, call, ports } = await answeredCall();
    handlersOf(call);
    call.transport.close('agent_hangup');
    await until(() => far.received.some((m) => m.kind === 'request' && m.method === 'BYE'));
    const bye = far.received.find((m) => m.kind === 'request' && m.method === 'BYE') as SipRequest;
    expect(bye.uri).toBe(`sip:far@127.0.0.1:${far.port}`);
    expect(tagOf(header(bye, 'from'))).toBe(tagOf(header(ok, 'to')));
    expect(tagOf(header(bye, 'to'))).toBe('far-tag');
    expect(call.ended).toBe('local_bye');
    expect(ports.used).toBe(0);
  });

  it('copies the INVITE’s Record-Route into its 180 and 200, and sends its BYE through that route', async () => {
    const { far, calls } = await agent(accept);
    const route = `<sip:127.0.0.1:${far.port};lr>`;
    far.send(
      requestText({
        method: 'INVITE',
        branch: 'z9hG4bKrr1',
        viaPort: far.port,
        extra: [`Record-Route: ${route}`, 'Contact: <sip:far@192.0.2.44:5060>', 'Content-Type: application/sdp'],
        body: offer(),
      }),
    );
    await until(() => far.received.length === 3);
    expect(far.received.slice(1).map((m) => header(m, 'record-route'))).toEqual([route, route]);
    calls[0]!.call.transport.close('agent_hangup');
    await until(() => far.received.some((m) => m.kind === 'request' && m.method === 'BYE'));
    const bye = far.received.find((m) => m.kind === 'request' && m.method === 'BYE') as SipRequest;
    expect(bye.uri).toBe('sip:far@192.0.2.44:5060');
    expect(header(bye, 'route')).toBe(route);
  });

  it('sends BYE and tells the session when its 200 is never ACKed (64·T1)', async () => {
    const { far, calls, timers } = await agent(accept);
    far.send(inviteFrom(far));
    await until(() => calls.length === 1);
    const log = handlersOf(calls[0]!.call);
    timers.advance(32_000);
    await until(() => far.received.some((m) => m.kind === 'request' && m.method === 'BYE'));
    expect(calls[0]!.call.ended).toBe('no_ack');
    expect(log.hangups).toBe(1);
  });
});

describe('SIP user agent, malformed input', () => {
  it('never throws on mutated INVITEs and in-dialog requests, and still answers OPTIONS after them', async () => {
    const { far, wire, calls } = await agent(accept);
    const valid = inviteFrom(far);
    const lines = valid.split('\r\n');
    const junk = fc.string({ unit: 'binary', maxLength: 40 });
    const mutation = fc.oneof(
      fc
        .tuple(fc.nat(), junk)
        .map(([at, text]) => valid.slice(0, at % valid.length) + text + valid.slice(at % valid.length)),
      fc.nat().map((at) => valid.slice(0, at % valid.length)),
      fc.tuple(fc.nat(), junk).map(([at, text]) => {
        const copy = [...lines];
        const index = 1 + (at % 8);
        copy[index] = `${copy[index]!.split(':')[0]}: ${text}`;
        return copy.join('\r\n');
      }),
      fc
        .tuple(fc.constantFrom('BYE', 'INVITE', 'UPDATE', 'INFO', 'ACK', 'CANCEL'), junk, fc.nat())
        .map(([method, text, n]) =>
          requestText({
            method,
            branch: `z9hG4bKfz${n}`,
            viaPort: far.port,
            cseq: n % 5,
            to: `<sip:+15550001@127.0.0.1>;tag=${text.replace(/[\r\n]/g, '')}`,
            extra: [`Contact: ${text.replace(/[\r\n]/g, '')}`, 'Content-Type: application/sdp'],
            body: text,
          }),
        ),
    );
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(mutation, async (text) => {
        far.send(text.replace(/branch=z9hG4bKin1/, `branch=z9hG4bKm${sent++}`));
        await new Promise((r) => setTimeout(r, 2));
      }),
      { seed: FUZZ_SEED, numRuns: runs(80) },
    );
    far.send(requestText({ method: 'OPTIONS', branch: 'z9hG4bKafter', viaPort: far.port, callId: 'after-fuzz' }));
    await until(() => far.received.some((m) => m.kind === 'response' && header(m, 'call-id') === 'after-fuzz'));
    expect(wire.stats.handlerErrors).toBe(0);
    for (const { call } of calls) call.transport.close('agent_hangup');
  });
});

describe('SIP user agent, outbound', () => {
  async function dialling(credentials?: { username: string; password: string }) {
    const a = await agent(accept);
    const progress: number[] = [];
    const dial = a.ua.dial({
      uri: 'sip:+15551234@127.0.0.1',
      from: 'sip:+15550001@127.0.0.1',
      peer: a.farPeer,
      credentials,
      onProgress: (status) => progress.push(status),
    });
    let result: DialResult | undefined;
    void dial.result.then((r) => (result = r));
    await until(() => a.far.received.length === 1, 'the INVITE');
    return { ...a, dial, progress, invite: a.far.received[0] as SipRequest, result: () => result };
  }

  const answer = offer({ port: 40010, codecs: '8 101' });

  it('offers G.722, PCMU, PCMA and telephone-event, reports ringing, and ACKs the 2xx end-to-end with its own branch', async () => {
    const { far, invite, progress, result } = await dialling();
    expect(parseSdp(invite.body).media[0]!.formats).toEqual(['9', '0', '8', '101']);
    far.send(responseTo(invite, 180, 'Ringing', { toTag: 'callee' }));
    await until(() => progress.length === 1);
    expect(progress).toEqual([180]);
    far.send(
      responseTo(invite, 200, 'OK', {
        toTag: 'callee',
        headers: [{ name: 'contact', value: `<sip:callee@127.0.0.1:${far.port}>` }],
        body: answer,
      }),
    );
    await until(() => result() !== undefined && far.received.length === 2);
    const ack = far.received[1] as SipRequest;
    expect(ack.method).toBe('ACK');
    expect(ack.uri).toBe(`sip:callee@127.0.0.1:${far.port}`);
    expect(header(ack, 'cseq')).toBe('1 ACK');
    expect(viaBranch(topVia(ack)!)).not.toBe(viaBranch(topVia(invite)!));
    const r = result()!;
    if (r.outcome !== 'answered') throw new Error(`not answered: ${JSON.stringify(r)}`);
    expect(r.call.media).toMatchObject({ payloadType: 8, remote: { address: '127.0.0.1', port: 40010 } });
    r.call.transport.close('agent_hangup');
    await until(() => far.received.some((m) => m.kind === 'request' && m.method === 'BYE'));
  });

  it('answers a 401 once with SHA-256 digest on the same Call-ID and From tag and a higher CSeq', async () => {
    const digest = new DigestServer({
      key: Buffer.alloc(32, 5),
      realm: 'trunk.example',
      clock: { now: () => 1_000 },
      random: (bytes) => 'ef'.repeat(bytes),
    });
    const { far, invite, result } = await dialling({ username: 'acct', password: 'pw' });
    far.send(
      responseTo(invite, 401, 'Unauthorized', {
        toTag: 'x',
        headers: digest.challenge().map((value) => ({ name: 'www-authenticate', value })),
      }),
    );
    await until(() => far.received.length === 3, 'the ACK of the 401 and the second INVITE');
    const second = far.received.find((m, i) => i > 0 && m.kind === 'request' && m.method === 'INVITE') as SipRequest;
    expect(header(second, 'cseq')).toBe('2 INVITE');
    expect(header(second, 'call-id')).toBe(header(invite, 'call-id'));
    expect(tagOf(header(second, 'from'))).toBe(tagOf(header(invite, 'from')));
    expect(digest.verify(second, header(second, 'authorization'), (u) => (u === 'acct' ? 'pw' : undefined))).toEqual({
      ok: true,
      username: 'acct',
    });
    expect(header(second, 'authorization')).toContain('algorithm=SHA-256');
    far.send(
      responseTo(second, 401, 'Unauthorized', {
        toTag: 'y',
        headers: [{ name: 'www-authenticate', value: digest.challenge()[0]! }],
      }),
    );
    await until(() => result() !== undefined);
    expect(result()).toEqual({ outcome: 'rejected', status: 401, reason: 'Unauthorized' });
  });

  it('reports a busy callee as rejected 486 and gives the port back', async () => {
    const { far, invite, result, ports } = await dialling();
    far.send(responseTo(invite, 486, 'Busy Here', { toTag: 'b' }));
    await until(() => result() !== undefined);
    expect(result()).toEqual({ outcome: 'rejected', status: 486, reason: 'Busy Here' });
    expect(ports.used).toBe(0);
  });

  it('CANCELs a ringing call and ends with the 487', async () => {
    const { far, invite, result, dial, ports } = await dialling();
    far.send(responseTo(invite, 180, 'Ringing', { toTag: 'c' }));
    await new Promise((r) => setTimeout(r, 30));
    dial.cancel();
    await until(() => far.received.some((m) => m.kind === 'request' && m.method === 'CANCEL'));
    const cancel = far.received.find((m) => m.kind === 'request' && m.method === 'CANCEL') as SipRequest;
    far.send(responseTo(cancel, 200, 'OK'));
    far.send(responseTo(invite, 487, 'Request Terminated', { toTag: 'c' }));
    await until(() => result() !== undefined);
    expect(result()).toEqual({ outcome: 'rejected', status: 487, reason: 'Request Terminated' });
    expect(ports.used).toBe(0);
  });
});

describe('SIP user agent to SIP user agent', () => {
  it('dials through a digest-protected trunk of another user agent, and a BYE from the caller ends both sides', async () => {
    const digest = new DigestServer({
      key: Buffer.alloc(32, 9),
      realm: 'callee.example',
      clock: { now: () => 1_000 },
      random: (bytes) => '12'.repeat(bytes),
    });
    const admission = new InboundAdmission(
      () => [
        { numbers: ['+15550009'], allowedAddresses: [], username: 'caller', password: 'open sesame', value: 'pbx' },
      ],
      digest,
    );
    const callee = await agent((invite, from) => admission.admit(invite, from));
    const caller = await agent(accept);
    const dial = caller.ua.dial({
      uri: `sip:+15550009@127.0.0.1:${callee.wire.address().udp}`,
      from: 'sip:+15550001@127.0.0.1',
      peer: { transport: 'udp', address: '127.0.0.1', port: callee.wire.address().udp! },
      credentials: { username: 'caller', password: 'open sesame' },
    });
    const r = await dial.result;
    if (r.outcome !== 'answered') throw new Error(`not answered: ${JSON.stringify(r)}`);
    await until(() => callee.calls.length === 1);
    expect(callee.calls[0]!.admitted).toEqual({ trunk: 'pbx', calledNumber: '+15550009' });
    const calleeCall = callee.calls[0]!.call;
    const log = handlersOf(calleeCall);
    handlersOf(r.call);
    r.call.transport.close('agent_hangup');
    await until(() => calleeCall.ended !== undefined);
    expect(calleeCall.ended).toBe('remote_bye');
    expect(log.hangups).toBe(1);
    expect(r.call.ended).toBe('local_bye');
    expect(caller.ports.used).toBe(0);
  });
});
