import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';

/** A port free on 127.0.0.1 now, for a child process that must keep one address across restarts. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A UDP port free on 127.0.0.1 now, for SIP and RTP peers started by a test (SIPp, a SIP phone). */
export async function freeUdpPort(): Promise<number> {
  const socket = createSocket('udp4');
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

/** Two UDP ports free on 127.0.0.1 now, one after the other: the first, for a service whose worker i takes it + i. */
export async function freeUdpPortPair(): Promise<number> {
  for (;;) {
    const port = await freeUdpPort();
    if (port >= 65535) continue;
    const next = createSocket('udp4');
    const bound = await new Promise<boolean>((resolve) => {
      next.once('error', () => resolve(false));
      next.bind(port + 1, '127.0.0.1', () => resolve(true));
    });
    await new Promise<void>((resolve) => next.close(() => resolve()));
    if (bound) return port;
  }
}
