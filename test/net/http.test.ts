import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { EgressPolicy } from '../../src/net/egress.ts';
import { cutUtf8, OutboundHttp, readBodyCapped, readTextCapped, sendRequest } from '../../src/net/http.ts';
import { testDispatcher } from '../support/outbound.ts';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  server = createServer(handler);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('outbound HTTP', () => {
  it('cuts UTF-8 text at a byte cap without leaving half a character', () => {
    const bytes = Buffer.from('a' + '€'.repeat(10), 'utf8'); // 1 + 30 bytes
    expect(cutUtf8(bytes, 5)).toBe('a€');
    expect(cutUtf8(bytes, 100)).toBe('a' + '€'.repeat(10));
  });

  it('reads at most the cap of a body and drops the rest unread, however much the server sends', async () => {
    let written = 0;
    const url = await serve((_req, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(16 * 1024, 0x61);
      const pump = (): void => {
        while (written < 64 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
    const res = await sendRequest(url, { method: 'GET', dispatcher: testDispatcher });
    const bytes = await readBodyCapped(res.body, 100_000);
    expect(bytes.length).toBe(100_000);
    expect(res.body.destroyed).toBe(true);
    // The server was stopped long before its 64 MiB: the socket closed once the cap was reached.
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('reads a small body whole as text', async () => {
    const url = await serve((_req, res) => res.end('{"ok":true}'));
    const res = await sendRequest(url, {
      method: 'POST',
      dispatcher: testDispatcher,
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(200);
    expect(await readTextCapped(res.body, 1024)).toBe('{"ok":true}');
  });

  it('keeps one shared pool per connect timeout, so connections are reused across callers', async () => {
    const outbound = new OutboundHttp(new EgressPolicy());
    expect(outbound.dispatcher(5_000)).toBe(outbound.dispatcher(5_000));
    expect(outbound.dispatcher()).toBe(outbound.dispatcher(10_000));
    expect(outbound.dispatcher(5_000)).not.toBe(outbound.dispatcher(10_000));
    await outbound.close();
  });

  it('aborts a request under way when its signal fires', async () => {
    const url = await serve(() => undefined); // never answers
    const controller = new AbortController();
    const pending = sendRequest(url, { method: 'GET', dispatcher: testDispatcher, signal: controller.signal });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });
});
