import { createServer, type AddressInfo } from 'node:net';

/** A port free on 127.0.0.1 now, for a child process that must keep one address across restarts. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
