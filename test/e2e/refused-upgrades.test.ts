// A WebSocket upgrade the service refuses (no key, a throttled key or address, a route that does not
// exist, a malformed path) is answered and its socket closed by the server, on every upgrade route:
// none is left open for nobody to serve, and SIGTERM still stops the process at once after them.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/net.ts';
import { startServiceProcess } from '../helpers/service-process.ts';

const KEY = 'refused-upgrades-key-0123456789-0123';
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

interface Refused {
  status: number;
  body: string;
  socket: Socket;
  /** Resolves true once the server closed its side (FIN or reset), false after `withinMs`. */
  closedByServer(withinMs: number): Promise<boolean>;
}

/** Sends a WebSocket upgrade on a raw socket and resolves with the HTTP answer once it is whole. */
function upgrade(port: number, path: string, headers: Record<string, string> = {}): Promise<Refused> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let serverClosed = false;
    const closeWaiters: (() => void)[] = [];
    const markClosed = () => {
      serverClosed = true;
      for (const wake of closeWaiters.splice(0)) wake();
    };
    socket.on('end', markClosed);
    socket.on('close', markClosed);
    socket.on('error', () => undefined);
    let received = Buffer.alloc(0);
    let answered = false;
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const text = received.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (answered || end === -1) return;
      const head = text.slice(0, end);
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? '0');
      if (received.length < end + 4 + length) return;
      answered = true;
      resolve({
        status: Number(head.split(' ')[1]),
        body: received.subarray(end + 4, end + 4 + length).toString('utf8'),
        socket,
        closedByServer: (withinMs) =>
          serverClosed
            ? Promise.resolve(true)
            : new Promise((done) => {
                const timer = setTimeout(() => done(false), withinMs);
                closeWaiters.push(() => {
                  clearTimeout(timer);
                  done(true);
                });
              }),
      });
    });
    socket.once('close', () => {
      if (!answered) reject(new Error(`closed before an answer to ${path}`));
    });
    const lines = [
      `GET ${path} HTTP/1.1`,
      `Host: 127.0.0.1:${port}`,
      'Connection: Upgrade',
      'Upgrade: websocket',
      'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ];
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  });
}

describe('refused WebSocket upgrades', () => {
  it('every refused upgrade (401 without a key, 429 throttled, 404 and 400 on media paths) is answered in the error shape and its socket closed by the server; SIGTERM after them exits within 5 s', async () => {
    const port = await freePort();
    const service = await startServiceProcess({
      dataDir: mkdtempSync(join(tmpdir(), 'voicecall-upgrades-')),
      port,
      key: KEY,
      env: { RATE_LIMIT_PER_MINUTE: '3' },
      started: children,
    });

    const refused: Refused[] = [];
    // No key: 401, ten times (under the per-address limit on failed authentications).
    for (let i = 0; i < 10; i++) refused.push(await upgrade(port, `/v2/calls/call_${i}/listen`));
    for (const r of refused) expect(r.status).toBe(401);
    // A key past its organization's limit: 429.
    for (let i = 0; i < 3; i++)
      await fetch(`${service.url}/v2/calls/call_x`, { headers: { authorization: `Bearer ${KEY}` } });
    const throttled: Refused[] = [];
    for (let i = 0; i < 5; i++)
      throttled.push(await upgrade(port, '/v2/calls/call_x/listen', { Authorization: `Bearer ${KEY}` }));
    for (const r of throttled) expect(r.status).toBe(429);
    // Media paths no route serves, or that do not parse.
    const media = [await upgrade(port, '/media/nowhere'), await upgrade(port, '/media/twilio%zz')];
    expect(media.map((r) => r.status)).toEqual([404, 400]);

    const all = [...refused, ...throttled, ...media];
    for (const r of all)
      expect(JSON.parse(r.body)).toEqual({
        error: expect.any(String),
        details: expect.any(String),
        code: expect.any(String),
      });
    // The client has not closed its side: only the server can have.
    expect(await Promise.all(all.map((r) => r.closedByServer(3_000)))).toEqual(all.map(() => true));

    // Clients that leave right after the refusal, still open when the service is told to stop.
    const leaving = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        upgrade(port, `/v2/calls/call_${i}/listen`, { Authorization: 'Bearer wrong-key-wrong-key-wrong-key-wrong' }),
      ),
    );
    for (const r of leaving) r.socket.end();
    const stopAt = Date.now();
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    expect(Date.now() - stopAt).toBeLessThan(5_000);
  }, 60_000);
});
