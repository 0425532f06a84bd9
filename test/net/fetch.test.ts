import { afterEach, describe, expect, it } from 'vitest';
import { EgressPolicy } from '../../src/net/egress.ts';
import { fetchThrough } from '../../src/net/fetch.ts';
import { OutboundHttp } from '../../src/net/http.ts';
import { startServer, type TestServer } from '../support/http-server.ts';
import { testDispatcher } from '../support/outbound.ts';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('the fetch given to libraries', () => {
  it('sends through the dispatcher it is given, headers and body as the library set them', async () => {
    server = await startServer((_req, res, body) => void res.writeHead(200, { 'x-seen': body }).end('ok'));
    const fetch = fetchThrough(testDispatcher, { maxBodyBytes: 1024 });
    const res = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { 'x-key': 'k' }, body: '{"a":1}' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-seen')).toBe('{"a":1}');
    expect(await res.text()).toBe('ok');
    expect(server.requests[0]).toMatchObject({ method: 'POST', url: '/mcp', body: '{"a":1}' });
    expect(server.requests[0]!.headers['x-key']).toBe('k');
  });

  it('is held to the egress policy: an internal address the policy does not open is never connected to', async () => {
    server = await startServer((_req, res) => void res.end('ok'));
    const guarded = new OutboundHttp(new EgressPolicy([]));
    try {
      const fetch = fetchThrough(guarded.dispatcher(), { maxBodyBytes: 1024 });
      await expect(fetch(`${server.url}/mcp`)).rejects.toThrow();
      expect(server.requests).toEqual([]);
    } finally {
      await guarded.close();
    }
  });

  it('fails the read of a body longer than the cap, and reads one within it whole', async () => {
    server = await startServer((req, res) => void res.end('x'.repeat(req.url === '/big' ? 2_000 : 1_000)));
    const fetch = fetchThrough(testDispatcher, { maxBodyBytes: 1_000 });
    expect(await (await fetch(`${server.url}/small`)).text()).toHaveLength(1_000);
    await expect((await fetch(`${server.url}/big`)).text()).rejects.toThrow(/over 1000 bytes/);
  });
});
