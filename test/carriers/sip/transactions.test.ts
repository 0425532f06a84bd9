import { afterEach, describe, expect, it } from 'vitest';
import {
  header,
  responseTo,
  type SipMessage,
  type SipRequest,
  type SipResponse,
} from '../../../src/carriers/sip/message.ts';
import {
  cseqOf,
  InviteClientTransaction,
  InviteServerTransaction,
  SipTransactionLayer,
  tagOf,
  topVia,
  viaBranch,
  type SipServerTransaction,
} from '../../../src/carriers/sip/transactions.ts';
import { SipSocketWire, type SipPeer, type SipWire } from '../../../src/carriers/sip/wire.ts';
import { ManualTimers } from '../../../src/timers.ts';
import { requestText, tcpPeer, udpPeer, until, type FarPeer } from '../../helpers/sip-peer.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The layer on real sockets, every message it sends recorded with the (manual) time it left. */
async function setUp() {
  const timers = new ManualTimers(0);
  const sent: { at: number; message: SipMessage; to: SipPeer }[] = [];
  const requests: SipServerTransaction[] = [];
  let layer: SipTransactionLayer | undefined;
  const wire = await SipSocketWire.listen({
    udp: { host: '127.0.0.1', port: 0 },
    tcp: { host: '127.0.0.1', port: 0 },
    onMessage: (message, from) => layer!.receive(message, from),
  });
  cleanups.push(() => wire.close());
  const recording: SipWire = {
    send(message, to) {
      sent.push({ at: timers.now(), message, to });
      wire.send(message, to);
    },
  };
  let n = 0;
  layer = new SipTransactionLayer({
    wire: recording,
    timers,
    random: (bytes) => (n++).toString(16).padStart(bytes * 2, '0'),
    sentBy: (transport) => `127.0.0.1:${wire.address()[transport]}`,
    onRequest: (tx) => requests.push(tx),
  });
  const far = await udpPeer(() => wire.address().udp!);
  cleanups.push(() => far.close());
  const farPeer: SipPeer = { transport: 'udp', address: '127.0.0.1', port: far.port };
  return { timers, sent, requests, layer, wire, far, farPeer };
}

const statusesOf = (messages: SipMessage[]) => messages.map((m) => (m.kind === 'response' ? m.status : m.method));
const timesOf = (sent: { at: number; message: SipMessage }[], match: (m: SipMessage) => boolean) =>
  sent.filter((s) => match(s.message)).map((s) => s.at);
const isStatus = (status: number) => (m: SipMessage) => m.kind === 'response' && m.status === status;
const isMethod = (method: string) => (m: SipMessage) => m.kind === 'request' && m.method === method;

function invite(far: FarPeer, branch = 'z9hG4bKinv1', extra: Partial<Parameters<typeof requestText>[0]> = {}) {
  return requestText({
    method: 'INVITE',
    branch,
    viaPort: far.port,
    extra: ['Contact: <sip:far@127.0.0.1>'],
    ...extra,
  });
}

describe('INVITE server transaction', () => {
  it('sends 100 Trying at once and the last provisional again for a retransmitted INVITE', async () => {
    const { far, requests } = await setUp();
    far.send(invite(far));
    await until(() => far.received.length === 1 && requests.length === 1);
    expect(statusesOf(far.received)).toEqual([100]);
    expect(tagOf(header(far.received[0]!, 'to'))).toBeUndefined();
    far.send(invite(far));
    await until(() => far.received.length === 2);
    requests[0]!.respond(180, 'Ringing');
    far.send(invite(far));
    await until(() => far.received.length === 4);
    expect(statusesOf(far.received)).toEqual([100, 100, 180, 180]);
    expect(tagOf(header(far.received[2]!, 'to'))).toBe((requests[0] as InviteServerTransaction).toTag);
    expect(requests).toHaveLength(1);
  });

  it('retransmits a non-2xx final over UDP on Timer G (T1 doubling to T2) and gives up at Timer H (64·T1)', async () => {
    const { far, requests, sent, timers, layer } = await setUp();
    far.send(invite(far));
    await until(() => requests.length === 1);
    requests[0]!.respond(486, 'Busy Here');
    timers.advance(32_000);
    expect(timesOf(sent, isStatus(486))).toEqual([0, 500, 1500, 3500, 7500, 11500, 15500, 19500, 23500, 27500, 31500]);
    expect(layer.size).toBe(0);
  });

  it('stops retransmitting on the ACK and absorbs late ACKs for Timer I (T4)', async () => {
    const { far, requests, sent, timers, layer } = await setUp();
    far.send(invite(far));
    await until(() => requests.length === 1);
    const tx = requests[0] as InviteServerTransaction;
    tx.respond(486, 'Busy Here');
    timers.advance(1600);
    far.send(
      requestText({
        method: 'ACK',
        branch: 'z9hG4bKinv1',
        viaPort: far.port,
        to: `<sip:+15550001@127.0.0.1>;tag=${tx.toTag}`,
      }),
    );
    await until(() => tx.state === 'confirmed');
    timers.advance(4999);
    expect(timesOf(sent, isStatus(486))).toEqual([0, 500, 1500]);
    expect(layer.size).toBe(1);
    timers.advance(1);
    expect(layer.size).toBe(0);
    expect(requests).toHaveLength(1);
  });

  it('retransmits a 2xx until the end-to-end ACK (a branch of its own) and hands that ACK up', async () => {
    const { far, requests, sent, timers } = await setUp();
    far.send(invite(far));
    await until(() => requests.length === 1);
    const tx = requests[0] as InviteServerTransaction;
    const acks: SipRequest[] = [];
    let ackTimeouts = 0;
    tx.events = { onAck: (ack) => acks.push(ack), onAckTimeout: () => ackTimeouts++ };
    tx.respond(200, 'OK');
    timers.advance(1600);
    far.send(
      requestText({
        method: 'ACK',
        branch: 'z9hG4bKack1',
        viaPort: far.port,
        to: `<sip:+15550001@127.0.0.1>;tag=${tx.toTag}`,
      }),
    );
    await until(() => acks.length === 1);
    timers.advance(40_000);
    expect(timesOf(sent, isStatus(200))).toEqual([0, 500, 1500]);
    expect(ackTimeouts).toBe(0);
  });

  it('tells the user agent when a 2xx is never ACKed within 64·T1', async () => {
    const { far, requests, sent, timers, layer } = await setUp();
    far.send(invite(far));
    await until(() => requests.length === 1);
    const tx = requests[0] as InviteServerTransaction;
    let ackTimeouts = 0;
    tx.events = { onAckTimeout: () => ackTimeouts++ };
    tx.respond(200, 'OK');
    timers.advance(32_000);
    expect(ackTimeouts).toBe(1);
    expect(timesOf(sent, isStatus(200))).toEqual([0, 500, 1500, 3500, 7500, 11500, 15500, 19500, 23500, 27500, 31500]);
    expect(layer.size).toBe(0);
  });

  it('answers a CANCEL 200 and its ringing INVITE 487, and tells the user agent', async () => {
    const { far, requests } = await setUp();
    far.send(invite(far));
    await until(() => requests.length === 1);
    const tx = requests[0] as InviteServerTransaction;
    let cancels = 0;
    tx.events = { onCancel: () => cancels++ };
    tx.respond(180, 'Ringing');
    far.send(requestText({ method: 'CANCEL', branch: 'z9hG4bKinv1', viaPort: far.port }));
    await until(() => far.received.length === 4);
    const [, , cancelOk, terminated] = far.received as SipResponse[];
    expect([cancelOk!.status, cseqOf(cancelOk!)!.method]).toEqual([200, 'CANCEL']);
    expect([terminated!.status, cseqOf(terminated!)!.method]).toEqual([487, 'INVITE']);
    expect(tagOf(header(terminated!, 'to'))).toBe(tx.toTag);
    expect(cancels).toBe(1);
    expect(requests).toHaveLength(1);
  });

  it('answers a CANCEL that matches no INVITE 481', async () => {
    const { far, requests } = await setUp();
    far.send(requestText({ method: 'CANCEL', branch: 'z9hG4bKnone', viaPort: far.port }));
    await until(() => far.received.length === 1);
    expect(statusesOf(far.received)).toEqual([481]);
    expect(requests).toHaveLength(0);
  });
});

describe('non-INVITE server transaction', () => {
  it('sends the final response again for each retransmitted request until Timer J (64·T1) ends it', async () => {
    const { far, requests, timers, layer } = await setUp();
    const bye = requestText({ method: 'BYE', branch: 'z9hG4bKbye1', viaPort: far.port });
    far.send(bye);
    await until(() => requests.length === 1);
    requests[0]!.respond(200, 'OK');
    far.send(bye);
    await until(() => far.received.length === 2);
    expect(statusesOf(far.received)).toEqual([200, 200]);
    timers.advance(31_999);
    expect(layer.size).toBe(1);
    timers.advance(1);
    expect(layer.size).toBe(0);
    far.send(bye);
    await until(() => requests.length === 2);
  });

  it('over TCP answers on the connection the request came in on and keeps nothing (Timer J is 0)', async () => {
    const { wire, requests, layer } = await setUp();
    const far = await tcpPeer(wire.address().tcp!);
    cleanups.push(() => far.close());
    far.send(requestText({ method: 'OPTIONS', branch: 'z9hG4bKopt1', viaPort: far.port, transport: 'TCP' }));
    await until(() => requests.length === 1);
    expect(requests[0]!.peer).toEqual({ transport: 'tcp', address: '127.0.0.1', port: far.port });
    requests[0]!.respond(200, 'OK');
    expect(layer.size).toBe(0);
    await until(() => far.received.length === 1);
    expect(statusesOf(far.received)).toEqual([200]);
  });

  it('answers a request whose Via has no RFC 3261 branch 400, and hands it to nobody', async () => {
    const { far, requests, layer } = await setUp();
    far.send(requestText({ method: 'OPTIONS', branch: 'old-style-1', viaPort: far.port }));
    await until(() => far.received.length === 1);
    expect(statusesOf(far.received)).toEqual([400]);
    expect(requests).toHaveLength(0);
    expect(layer.unmatchable).toBe(1);
  });
});

/** An INVITE as this side's user agent hands it to the layer (no Via: the layer adds it). */
function outboundInvite(): SipRequest {
  return {
    kind: 'request',
    method: 'INVITE',
    uri: 'sip:+15550001@127.0.0.1',
    headers: [
      { name: 'max-forwards', value: '70' },
      { name: 'from', value: '<sip:+15550002@127.0.0.1>;tag=ours' },
      { name: 'to', value: '<sip:+15550001@127.0.0.1>' },
      { name: 'call-id', value: 'out-1@127.0.0.1' },
      { name: 'cseq', value: '7 INVITE' },
      { name: 'route', value: '<sip:proxy.example;lr>' },
    ],
    body: '',
  };
}

function recorder() {
  const responses: SipResponse[] = [];
  let timeouts = 0;
  return {
    responses,
    get timeouts() {
      return timeouts;
    },
    handlers: { onResponse: (r: SipResponse) => responses.push(r), onTimeout: () => timeouts++ },
  };
}

describe('INVITE client transaction', () => {
  it('retransmits over UDP on Timer A (T1 doubling) and gives up at Timer B (64·T1)', async () => {
    const { layer, farPeer, sent, timers, far } = await setUp();
    const r = recorder();
    layer.sendRequest(outboundInvite(), farPeer, r.handlers);
    await until(() => far.received.length === 1);
    const via = topVia(far.received[0]!)!;
    expect(via).toMatch(/^SIP\/2\.0\/UDP 127\.0\.0\.1:\d+;branch=z9hG4bK[0-9a-f]+;rport$/);
    timers.advance(32_000);
    expect(timesOf(sent, isMethod('INVITE'))).toEqual([0, 500, 1500, 3500, 7500, 15500, 31500]);
    expect(r.timeouts).toBe(1);
    expect(layer.size).toBe(0);
  });

  it('over TCP sends the INVITE once and still gives up at Timer B', async () => {
    const { layer, sent, timers } = await setUp();
    const r = recorder();
    // Nothing listens on this port: what matters is what the transaction sends and when it gives up.
    layer.sendRequest(outboundInvite(), { transport: 'tcp', address: '127.0.0.1', port: 9 }, r.handlers);
    timers.advance(32_000);
    expect(timesOf(sent, isMethod('INVITE'))).toEqual([0]);
    expect(r.timeouts).toBe(1);
  });

  it('ACKs a non-2xx final inside the transaction (same branch, the response’s To tag) and again for each retransmission', async () => {
    const { layer, farPeer, timers, far } = await setUp();
    const r = recorder();
    layer.sendRequest(outboundInvite(), farPeer, r.handlers);
    await until(() => far.received.length === 1);
    const sentInvite = far.received[0] as SipRequest;
    const busy = responseTo(sentInvite, 486, 'Busy Here', { toTag: 'theirs' });
    far.send(busy);
    await until(() => far.received.length === 2);
    const ack = far.received[1] as SipRequest;
    expect(ack.method).toBe('ACK');
    expect(ack.uri).toBe(sentInvite.uri);
    expect(viaBranch(topVia(ack)!)).toBe(viaBranch(topVia(sentInvite)!));
    expect(header(ack, 'cseq')).toBe('7 ACK');
    expect(tagOf(header(ack, 'to'))).toBe('theirs');
    expect(header(ack, 'route')).toBe('<sip:proxy.example;lr>');
    far.send(busy);
    await until(() => far.received.length === 3);
    expect(statusesOf(far.received)).toEqual(['INVITE', 'ACK', 'ACK']);
    expect(r.responses.map((x) => x.status)).toEqual([486]);
    timers.advance(32_000);
    expect(layer.size).toBe(0);
    expect(r.timeouts).toBe(0);
  });

  it('passes each 2xx up (the user agent ACKs it end-to-end) and sends no ACK itself', async () => {
    const { layer, farPeer, far } = await setUp();
    const r = recorder();
    layer.sendRequest(outboundInvite(), farPeer, r.handlers);
    await until(() => far.received.length === 1);
    const ok = responseTo(far.received[0] as SipRequest, 200, 'OK', { toTag: 'theirs' });
    far.send(ok);
    far.send(ok);
    await until(() => r.responses.length === 2);
    expect(r.responses.map((x) => x.status)).toEqual([200, 200]);
    expect(statusesOf(far.received)).toEqual(['INVITE']);
  });

  it('waits for a provisional response before it CANCELs, on the INVITE’s branch and CSeq number', async () => {
    const { layer, farPeer, far } = await setUp();
    const r = recorder();
    const tx = layer.sendRequest(outboundInvite(), farPeer, r.handlers) as InviteClientTransaction;
    await until(() => far.received.length === 1);
    const sentInvite = far.received[0] as SipRequest;
    tx.cancel();
    far.send(responseTo(sentInvite, 180, 'Ringing', { toTag: 'theirs' }));
    await until(() => far.received.length === 2);
    const cancel = far.received[1] as SipRequest;
    expect(cancel.method).toBe('CANCEL');
    expect(header(cancel, 'cseq')).toBe('7 CANCEL');
    expect(viaBranch(topVia(cancel)!)).toBe(viaBranch(topVia(sentInvite)!));
    expect(tagOf(header(cancel, 'to'))).toBeUndefined();
    far.send(responseTo(cancel, 200, 'OK', { toTag: 'theirs' }));
    far.send(responseTo(sentInvite, 487, 'Request Terminated', { toTag: 'theirs' }));
    await until(() => far.received.length === 3);
    expect(statusesOf(far.received)).toEqual(['INVITE', 'CANCEL', 'ACK']);
    expect(r.responses.map((x) => x.status)).toEqual([180, 487]);
  });

  it('gives the call up 64·T1 after a CANCEL that brings no final response', async () => {
    const { layer, farPeer, far, timers } = await setUp();
    const r = recorder();
    const tx = layer.sendRequest(outboundInvite(), farPeer, r.handlers) as InviteClientTransaction;
    await until(() => far.received.length === 1);
    far.send(responseTo(far.received[0] as SipRequest, 183, 'Session Progress', { toTag: 'theirs' }));
    await until(() => r.responses.length === 1);
    timers.advance(60_000);
    expect(r.timeouts).toBe(0);
    tx.cancel();
    timers.advance(31_999);
    expect(r.timeouts).toBe(0);
    timers.advance(1);
    expect(r.timeouts).toBe(1);
  });
});

describe('non-INVITE client transaction', () => {
  function bye(): SipRequest {
    const request = outboundInvite();
    return {
      ...request,
      method: 'BYE',
      headers: request.headers.map((h) => (h.name === 'cseq' ? { name: 'cseq', value: '8 BYE' } : h)),
    };
  }

  it('retransmits on Timer E (T1 doubling to T2) and gives up at Timer F (64·T1)', async () => {
    const { layer, farPeer, sent, timers } = await setUp();
    const r = recorder();
    layer.sendRequest(bye(), farPeer, r.handlers);
    timers.advance(32_000);
    expect(timesOf(sent, isMethod('BYE'))).toEqual([
      0, 500, 1500, 3500, 7500, 11500, 15500, 19500, 23500, 27500, 31500,
    ]);
    expect(r.timeouts).toBe(1);
    expect(layer.size).toBe(0);
  });

  it('retransmits every T2 once a provisional came, and absorbs the final’s retransmissions for Timer K (T4)', async () => {
    const { layer, farPeer, sent, timers, far, wire } = await setUp();
    const r = recorder();
    layer.sendRequest(bye(), farPeer, r.handlers);
    await until(() => far.received.length === 1);
    const request = far.received[0] as SipRequest;
    far.send(responseTo(request, 100, 'Trying'));
    await until(() => r.responses.length === 1);
    timers.advance(5000);
    expect(timesOf(sent, isMethod('BYE'))).toEqual([0, 500, 4500]);
    const ok = responseTo(request, 200, 'OK', { toTag: 'theirs' });
    far.send(ok);
    far.send(ok);
    await until(() => wire.stats.received === 3, 'both copies of the 200');
    timers.advance(4999);
    expect(layer.size).toBe(1);
    timers.advance(1);
    expect(layer.size).toBe(0);
    expect(r.responses.map((x) => x.status)).toEqual([100, 200]);
    expect(r.timeouts).toBe(0);
  });
});
