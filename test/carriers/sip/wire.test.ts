import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  parseSipMessage,
  responseTo,
  SipStreamFramer,
  type SipMessage,
  type SipRequest,
} from '../../../src/carriers/sip/message.ts';
import { SipSocketWire, type SipPeer } from '../../../src/carriers/sip/wire.ts';
import { requestText, tcpPeer, udpPeer, until } from '../../helpers/sip-peer.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp() {
  const got: { message: SipMessage; from: SipPeer }[] = [];
  const wire = await SipSocketWire.listen({
    udp: { host: '127.0.0.1', port: 0 },
    tcp: { host: '127.0.0.1', port: 0 },
    onMessage: (message, from) => got.push({ message, from }),
  });
  cleanups.push(() => wire.close());
  return { wire, got };
}

describe('SIP wire', () => {
  it('reads a datagram and sends the response back to its source address and port', async () => {
    const { wire, got } = await setUp();
    const far = await udpPeer(() => wire.address().udp!);
    cleanups.push(() => far.close());
    far.send(requestText({ method: 'OPTIONS', branch: 'z9hG4bKw1', viaPort: 1 }));
    await until(() => got.length === 1);
    expect(got[0]!.from).toEqual({ transport: 'udp', address: '127.0.0.1', port: far.port });
    wire.send(responseTo(got[0]!.message as SipRequest, 200, 'OK'), got[0]!.from);
    await until(() => far.received.length === 1);
    expect(far.received[0]).toMatchObject({ kind: 'response', status: 200 });
  });

  it('drops and counts a datagram that is not SIP, and ignores a CRLF keep-alive', async () => {
    const { wire, got } = await setUp();
    const far = await udpPeer(() => wire.address().udp!);
    cleanups.push(() => far.close());
    far.send('\r\n\r\n');
    far.send('GARBAGE\r\n\r\n');
    far.send(requestText({ method: 'OPTIONS', branch: 'z9hG4bKw2', viaPort: 1 }));
    await until(() => got.length === 1);
    expect(wire.stats).toMatchObject({ received: 1, malformed: 1 });
  });

  it('frames TCP messages split across chunks, answers on the same connection, and answers a double-CRLF ping', async () => {
    const { wire, got } = await setUp();
    const far = await tcpPeer(wire.address().tcp!);
    cleanups.push(() => far.close());
    const text = requestText({
      method: 'OPTIONS',
      branch: 'z9hG4bKw3',
      viaPort: far.port,
      transport: 'TCP',
      body: 'hello',
    });
    far.connection.write(text.slice(0, 40));
    await new Promise((r) => setTimeout(r, 20));
    far.connection.write(text.slice(40) + text);
    await until(() => got.length === 2);
    expect(got[0]!.message.body).toBe('hello');
    expect(got[0]!.from).toEqual({ transport: 'tcp', address: '127.0.0.1', port: far.port });
    const pong = once(far.connection, 'data');
    far.connection.write('\r\n\r\n');
    expect(String((await pong)[0])).toBe('\r\n');
    wire.send(responseTo(got[0]!.message as SipRequest, 200, 'OK'), got[0]!.from);
    await until(() => far.received.length === 1);
    expect(far.received[0]).toMatchObject({ kind: 'response', status: 200 });
  });

  it('closes a TCP connection that sends a message without Content-Length', async () => {
    const { wire } = await setUp();
    const far = await tcpPeer(wire.address().tcp!);
    cleanups.push(() => far.close());
    const closed = once(far.connection, 'close');
    far.connection.write('OPTIONS sip:a@b SIP/2.0\r\nVia: SIP/2.0/TCP x;branch=z9hG4bKq\r\n\r\n');
    await closed;
    expect(wire.stats.brokenStreams).toBe(1);
  });

  it('opens a TCP connection to a peer it has none with', async () => {
    const { wire } = await setUp();
    const messages: SipMessage[] = [];
    const sockets: Socket[] = [];
    const server = createServer((socket) => {
      sockets.push(socket);
      const framer = new SipStreamFramer();
      socket.on('data', (chunk: Buffer) => {
        for (const bytes of framer.push(chunk).messages) {
          const parsed = parseSipMessage(bytes);
          if (parsed.ok) messages.push(parsed.message);
        }
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    cleanups.push(() => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(r));
    });
    const port = (server.address() as { port: number }).port;
    const request = parseSipMessage(Buffer.from(requestText({ method: 'BYE', branch: 'z9hG4bKw5', viaPort: 1 })));
    if (!request.ok) throw new Error(request.reason);
    wire.send(request.message, { transport: 'tcp', address: '127.0.0.1', port });
    wire.send(request.message, { transport: 'tcp', address: '127.0.0.1', port });
    await until(() => messages.length === 2);
    expect(sockets).toHaveLength(1);
  });
});
