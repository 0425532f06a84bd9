// Provider sockets are held to the egress policy as HTTP requests are (src/net/websocket.ts).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { EgressPolicy } from '../../src/net/egress.ts';
import { webSocketOpener } from '../../src/net/websocket.ts';

describe('openWebSocket', () => {
  let server: Server | undefined;
  let upgrades = 0;

  afterEach(async () => {
    await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
    server = undefined;
    upgrades = 0;
  });

  /** A WebSocket server on loopback that echoes; answers 401 to an upgrade without the key. */
  async function serve(): Promise<number> {
    server = createServer();
    const sockets = new WebSocketServer({ noServer: true });
    server.on('upgrade', (request, socket, head) => {
      upgrades += 1;
      if (request.headers.authorization !== 'Token k') {
        socket.end('HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      sockets.handleUpgrade(request, socket, head, (ws) => ws.on('message', (data) => ws.send(data)));
    });
    await new Promise<void>((done) => server!.listen(0, '127.0.0.1', done));
    return (server.address() as AddressInfo).port;
  }

  it('opens no socket to an internal address the policy has not opened, by address or by name', async () => {
    const port = await serve();
    const open = webSocketOpener(new EgressPolicy());
    await expect(open(`ws://127.0.0.1:${port}/`)).rejects.toMatchObject({ code: 'EGRESS_REFUSED' });
    await expect(open(`ws://localhost:${port}/`)).rejects.toMatchObject({ code: 'EGRESS_REFUSED' });
    expect(upgrades).toBe(0);
  });

  it('keeps a message sent with the upgrade for the listener attached once the socket is given', async () => {
    server = createServer();
    const sockets = new WebSocketServer({ noServer: true });
    server.on('upgrade', (request, socket, head) =>
      sockets.handleUpgrade(request, socket, head, (ws) => ws.send('Begin')),
    );
    await new Promise<void>((done) => server!.listen(0, '127.0.0.1', done));
    const port = (server.address() as AddressInfo).port;
    const open = webSocketOpener(EgressPolicy.fromEnv(`127.0.0.1:${port}`));
    for (let i = 0; i < 5; i++) {
      const socket = await open(`ws://127.0.0.1:${port}/`);
      const first = await new Promise<string>((done) => socket.once('message', (data) => done(String(data))));
      expect(first).toBe('Begin');
      socket.close();
    }
  });

  it('refuses a URL that is not ws or wss', async () => {
    const open = webSocketOpener(EgressPolicy.fromEnv('127.0.0.1:1'));
    await expect(open('http://127.0.0.1:1/')).rejects.toMatchObject({ code: 'EGRESS_REFUSED' });
  });

  it('opens to an address EGRESS_ALLOW opens, reaching it by name through the checked address', async () => {
    const port = await serve();
    const open = webSocketOpener(EgressPolicy.fromEnv(`127.0.0.1:${port},localhost:${port}`));
    const socket = await open(`ws://localhost:${port}/listen`, { headers: { authorization: 'Token k' } });
    const echoed = new Promise<string>((done) => socket.once('message', (data) => done(String(data))));
    socket.send('hello');
    expect(await echoed).toBe('hello');
    socket.close();
  });

  it('reports a refused upgrade as the upstream status, not a hang', async () => {
    const port = await serve();
    const open = webSocketOpener(EgressPolicy.fromEnv(`127.0.0.1:${port}`));
    await expect(open(`ws://127.0.0.1:${port}/`)).rejects.toMatchObject({ code: 'UPSTREAM_STATUS', status: 401 });
  });

  it('rejects at once when its signal aborts before the socket opens', async () => {
    const port = await serve();
    const open = webSocketOpener(EgressPolicy.fromEnv(`127.0.0.1:${port}`));
    const abort = new AbortController();
    abort.abort(new Error('hung up'));
    await expect(open(`ws://127.0.0.1:${port}/`, { signal: abort.signal })).rejects.toThrow('hung up');
  });
});
