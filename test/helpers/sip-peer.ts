// A far SIP peer for tests: a raw UDP socket or TCP connection on 127.0.0.1 that records every
// message it receives (parsed by the service's own reader, which its tests check) and sends
// whatever text a test writes, so the side under test meets real sockets and exact bytes.
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { once } from 'node:events';
import { createConnection, type Socket as TcpSocket } from 'node:net';
import {
  parseSipMessage,
  serializeSipMessage,
  SipStreamFramer,
  type SipMessage,
} from '../../src/carriers/sip/message.ts';
import { RtpPortPool } from '../../src/carriers/sip/rtp-ports.ts';
import { SipUserAgent, type SipUserAgentOptions } from '../../src/carriers/sip/user-agent.ts';
import { SipSocketWire } from '../../src/carriers/sip/wire.ts';
import { ManualTimers } from '../../src/timers.ts';

export async function until(done: () => boolean, what = 'the condition'): Promise<void> {
  for (let i = 0; i < 1000 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
  if (!done()) throw new Error(`timed out waiting for ${what}`);
}

export interface FarPeer {
  port: number;
  received: SipMessage[];
  send(message: string | SipMessage): void;
  close(): void;
}

function bytesOf(message: string | SipMessage): Buffer {
  return typeof message === 'string' ? Buffer.from(message, 'utf8') : serializeSipMessage(message);
}

/** A peer on its own UDP port that sends to `target`. */
export async function udpPeer(target: () => number): Promise<FarPeer> {
  const socket: UdpSocket = createSocket('udp4');
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  const received: SipMessage[] = [];
  socket.on('message', (datagram: Buffer) => {
    const parsed = parseSipMessage(datagram);
    if (parsed.ok) received.push(parsed.message);
  });
  return {
    port: socket.address().port,
    received,
    send: (message) => socket.send(bytesOf(message), target(), '127.0.0.1'),
    close: () => socket.close(),
  };
}

/** A peer that connects to `port` over TCP. */
export async function tcpPeer(port: number): Promise<FarPeer & { connection: TcpSocket }> {
  const connection = createConnection({ host: '127.0.0.1', port });
  await once(connection, 'connect');
  const received: SipMessage[] = [];
  const framer = new SipStreamFramer();
  connection.on('data', (chunk: Buffer) => {
    for (const bytes of framer.push(chunk).messages) {
      const parsed = parseSipMessage(bytes);
      if (parsed.ok) received.push(parsed.message);
    }
  });
  return {
    port: connection.localPort!,
    connection,
    received,
    send: (message) => connection.write(bytesOf(message)),
    close: () => connection.destroy(),
  };
}

/** A request as a far peer writes it; `extra` lines go before Content-Length. */
export function requestText(o: {
  method: string;
  uri?: string;
  branch: string;
  viaPort: number;
  callId?: string;
  cseq?: number;
  cseqMethod?: string;
  fromTag?: string;
  to?: string;
  extra?: string[];
  body?: string;
  transport?: 'UDP' | 'TCP';
}): string {
  const body = o.body ?? '';
  return [
    `${o.method} ${o.uri ?? 'sip:+15550001@127.0.0.1'} SIP/2.0`,
    `Via: SIP/2.0/${o.transport ?? 'UDP'} 127.0.0.1:${o.viaPort};branch=${o.branch};rport`,
    'Max-Forwards: 70',
    `From: <sip:+15551234@127.0.0.1>;tag=${o.fromTag ?? 'far-tag'}`,
    `To: ${o.to ?? '<sip:+15550001@127.0.0.1>'}`,
    `Call-ID: ${o.callId ?? 'call-1@127.0.0.1'}`,
    `CSeq: ${o.cseq ?? 1} ${o.cseqMethod ?? o.method}`,
    ...(o.extra ?? []),
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

/**
 * The service's own user agent on a loopback UDP wire, for tests that drive it from a far peer: manual timers, RTP
 * ports from `rtpPorts` (a range no other test file binds: they run in parallel), tags counted up so they are exact.
 * What closes the wire goes on `cleanups`.
 */
export async function loopbackUserAgent<T>(o: {
  rtpPorts: { low: number; high: number };
  admit: SipUserAgentOptions<T>['admit'];
  onCall: SipUserAgentOptions<T>['onCall'];
  cleanups: (() => unknown)[];
}): Promise<{ ua: SipUserAgent<T>; wire: SipSocketWire; timers: ManualTimers; ports: RtpPortPool }> {
  const timers = new ManualTimers(0);
  const ports = new RtpPortPool(o.rtpPorts, '127.0.0.1');
  let ua: SipUserAgent<T> | undefined;
  const wire = await SipSocketWire.listen({
    udp: { host: '127.0.0.1', port: 0 },
    onMessage: (message, from) => ua!.receive(message, from),
  });
  o.cleanups.push(() => wire.close());
  let n = 0;
  ua = new SipUserAgent<T>({
    wire,
    timers,
    random: (bytes) => (n++).toString(16).padStart(bytes * 2, '0'),
    publicHost: '127.0.0.1',
    sentBy: () => `127.0.0.1:${wire.address().udp}`,
    ports,
    admit: o.admit,
    onCall: o.onCall,
  });
  return { ua, wire, timers, ports };
}
