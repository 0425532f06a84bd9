// SIP's transport layer (RFC 3261 §18) over UDP and TCP: messages in from sockets, messages out
// to a peer. A request that cannot be read is dropped and counted (a reply would need the very
// header fields that could not be read); a TCP stream that breaks the framing is closed, since
// nothing after the break can be found again. A response goes back where its request came from:
// over UDP to the source address and port (what rport asks for, and what gets through a NAT),
// over TCP on the connection the request came in on. A request to a TCP peer with no open
// connection opens one.
import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram';
import { once } from 'node:events';
import { createConnection, createServer, isIPv6, type Server, type Socket as TcpSocket } from 'node:net';
import { parseSipMessage, serializeSipMessage, SipStreamFramer, type SipMessage } from './message.ts';

export type SipTransportName = 'udp' | 'tcp';

/** Where a message came from or goes to. */
export interface SipPeer {
  transport: SipTransportName;
  address: string;
  port: number;
}

/** What the transaction layer sends through. */
export interface SipWire {
  send(message: SipMessage, to: SipPeer): void;
}

export interface SipListenAddress {
  host: string;
  /** 0 takes any free port (tests); `address()` says which. */
  port: number;
}

export interface SipWireOptions {
  udp?: SipListenAddress | undefined;
  tcp?: SipListenAddress | undefined;
  onMessage: (message: SipMessage, from: SipPeer) => void;
  /** A message the handler threw on (a bug): counted and reported here, never fatal to the listener. */
  onError?: (error: unknown, message: SipMessage) => void;
  /** Idle TCP connections are closed after this (a trunk's keeps pinging if it wants it kept). */
  tcpIdleMs?: number;
}

export interface SipWireStats {
  received: number;
  sent: number;
  /** Datagrams or stream messages that were not SIP. */
  malformed: number;
  /** TCP connections closed for breaking the framing. */
  brokenStreams: number;
  /** Messages the handler threw on. */
  handlerErrors: number;
}

const TCP_IDLE_MS = 10 * 60_000;

/** TCP peers are keyed by address and port, the same either way a connection was opened. */
function peerKey(address: string, port: number): string {
  return `${normalize(address)}|${port}`;
}

function normalize(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address.toLowerCase();
}

export class SipSocketWire implements SipWire {
  private udp: UdpSocket | undefined;
  private tcp: Server | undefined;
  private readonly connections = new Map<string, TcpSocket>();
  private closed = false;
  readonly stats: SipWireStats = { received: 0, sent: 0, malformed: 0, brokenStreams: 0, handlerErrors: 0 };

  private constructor(private readonly o: SipWireOptions) {}

  /** Binds the listeners asked for; resolves when they all listen. */
  static async listen(o: SipWireOptions): Promise<SipSocketWire> {
    const wire = new SipSocketWire(o);
    if (o.udp) {
      const socket = createSocket(isIPv6(o.udp.host) ? 'udp6' : 'udp4');
      socket.on('message', (datagram: Buffer, info: RemoteInfo) =>
        wire.receive(datagram, { transport: 'udp', address: normalize(info.address), port: info.port }),
      );
      socket.on('error', () => {});
      // Exclusive: in a cluster worker a shared bind would hand this port's datagrams to other processes too.
      socket.bind({ port: o.udp.port, address: o.udp.host, exclusive: true });
      await once(socket, 'listening');
      wire.udp = socket;
    }
    if (o.tcp) {
      const server = createServer((connection) => wire.adopt(connection));
      server.listen({ port: o.tcp.port, host: o.tcp.host, exclusive: true });
      await once(server, 'listening');
      wire.tcp = server;
    }
    return wire;
  }

  /** The bound ports (the one asked for, or the one taken for port 0). */
  address(): { udp?: number; tcp?: number } {
    const tcp = this.tcp?.address();
    return {
      ...(this.udp ? { udp: this.udp.address().port } : {}),
      ...(tcp && typeof tcp === 'object' ? { tcp: tcp.port } : {}),
    };
  }

  send(message: SipMessage, to: SipPeer): void {
    if (this.closed) return;
    const bytes = serializeSipMessage(message);
    this.stats.sent++;
    if (to.transport === 'udp') {
      this.udp?.send(bytes, to.port, to.address);
      return;
    }
    const key = peerKey(to.address, to.port);
    let connection = this.connections.get(key);
    if (!connection || connection.destroyed) {
      connection = createConnection({ host: to.address, port: to.port });
      this.adopt(connection, key);
    }
    connection.write(bytes);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const connection of this.connections.values()) connection.destroy();
    this.connections.clear();
    const waits: Promise<unknown>[] = [];
    if (this.udp) {
      const udp = this.udp;
      waits.push(new Promise<void>((resolve) => udp.close(() => resolve())));
    }
    if (this.tcp) {
      const tcp = this.tcp;
      waits.push(new Promise<void>((resolve) => tcp.close(() => resolve())));
    }
    await Promise.all(waits);
  }

  private adopt(connection: TcpSocket, knownKey?: string): void {
    if (this.closed) {
      connection.destroy();
      return;
    }
    const framer = new SipStreamFramer();
    let key = knownKey;
    const remember = (): void => {
      if (key === undefined && connection.remoteAddress && connection.remotePort)
        key = peerKey(connection.remoteAddress, connection.remotePort);
      if (key !== undefined && !this.connections.has(key)) this.connections.set(key, connection);
    };
    remember();
    connection.setTimeout(this.o.tcpIdleMs ?? TCP_IDLE_MS, () => connection.destroy());
    connection.on('error', () => {});
    connection.on('close', () => {
      if (key !== undefined && this.connections.get(key) === connection) this.connections.delete(key);
    });
    connection.on('data', (chunk: Buffer) => {
      remember();
      const peer: SipPeer = {
        transport: 'tcp',
        address: normalize(connection.remoteAddress ?? ''),
        port: connection.remotePort ?? 0,
      };
      const { messages, pings, error } = framer.push(chunk);
      for (const message of messages) this.receive(message, peer);
      // A double-CRLF keep-alive is answered with one CRLF (RFC 5626 §4.4.1).
      for (let i = 0; i < pings; i++) connection.write('\r\n');
      if (error) {
        this.stats.brokenStreams++;
        connection.destroy();
      }
    });
  }

  private receive(bytes: Buffer, from: SipPeer): void {
    if (this.closed) return;
    // A lone keep-alive datagram (CRLF) is not a message.
    if (from.transport === 'udp' && bytes.length <= 4 && bytes.toString('latin1').trim() === '') return;
    const parsed = parseSipMessage(bytes);
    if (!parsed.ok) {
      this.stats.malformed++;
      return;
    }
    this.stats.received++;
    try {
      this.o.onMessage(parsed.message, from);
    } catch (error) {
      this.stats.handlerErrors++;
      this.o.onError?.(error, parsed.message);
    }
  }
}
