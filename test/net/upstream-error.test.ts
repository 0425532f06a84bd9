import { afterEach, describe, expect, it } from 'vitest';
import { readTextCapped, sendRequest } from '../../src/net/http.ts';
import { errorBodyMessage, UPSTREAM_ERROR_DEFAULTS, UpstreamError } from '../../src/net/upstream-error.ts';
import { testDispatcher } from '../support/outbound.ts';
import { startServer, type Handler, type TestServer } from '../support/http-server.ts';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(handler: Handler): Promise<string> {
  server = await startServer(handler);
  return server.url;
}

async function rejection(pending: Promise<unknown>): Promise<unknown> {
  try {
    await pending;
  } catch (error) {
    return error;
  }
  throw new Error('the request succeeded');
}

describe('the capped error-body interceptor', () => {
  it('fails a request that asks on a non-2xx answer with UpstreamError: its status and the message its body gives', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } }));
    });
    const error = await rejection(
      sendRequest(url, { method: 'POST', body: '{}', dispatcher: testDispatcher, upstreamErrors: true }),
    );
    expect(error).toBeInstanceOf(UpstreamError);
    expect(error).toMatchObject({
      code: 'UPSTREAM_STATUS',
      status: 503,
      detail: 'overloaded',
      message: 'HTTP 503: overloaded',
    });
  });

  it('reads at most the cap of a failure answer and drops the connection past it, however much the server sends', async () => {
    let written = 0;
    const url = await serve((_req, res) => {
      res.writeHead(500);
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
    const error = await rejection(
      sendRequest(url, { method: 'GET', dispatcher: testDispatcher, upstreamErrors: true }),
    );
    expect(error).toMatchObject({ status: 500 });
    expect((error as UpstreamError).detail).toBe('a'.repeat(UPSTREAM_ERROR_DEFAULTS.messageChars));
    await server?.requestSocketClosed(1);
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('hands a failure answer to a request that does not ask, as an answer (a tool’s error body is the model’s content)', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(409, { 'content-type': 'application/json' });
      res.end('{"error":"Slot taken"}');
    });
    const res = await sendRequest(url, { method: 'POST', dispatcher: testDispatcher });
    expect(res.statusCode).toBe(409);
    expect(await readTextCapped(res.body, 100)).toBe('{"error":"Slot taken"}');
  });

  it('passes a 2xx answer through untouched, as it streams', async () => {
    let finish: (() => void) | undefined;
    const url = await serve((_req, res) => {
      res.writeHead(200);
      res.write('first ');
      finish = () => res.end('second');
    });
    const res = await sendRequest(url, { method: 'GET', dispatcher: testDispatcher, upstreamErrors: true });
    const reads = res.body[Symbol.asyncIterator]();
    // The first piece arrives while the server still holds the rest.
    expect(String((await reads.next()).value)).toBe('first ');
    finish?.();
    let rest = '';
    for (let read = await reads.next(); !read.done; read = await reads.next()) rest += String(read.value);
    expect(rest).toBe('second');
  });

  it('fails with the caller’s abort, not an UpstreamError, when stopped while the failure answer is read', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(502);
      res.write('bad '); // and never ends
    });
    const controller = new AbortController();
    const pending = sendRequest(url, {
      method: 'GET',
      dispatcher: testDispatcher,
      upstreamErrors: true,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 20);
    const error = await rejection(pending);
    expect(error).not.toBeInstanceOf(UpstreamError);
    expect(error).toMatchObject({ name: 'AbortError' });
  });
});

describe('what an error body says', () => {
  it('reads the message of the usual error shapes, and nothing of any other body', () => {
    expect(errorBodyMessage('{"error":{"message":"model not found"}}')).toEqual({ message: 'model not found' });
    expect(errorBodyMessage('{"error":"Slot taken","details":"Try 10am"}')).toEqual({
      message: 'Slot taken',
      details: 'Try 10am',
    });
    expect(errorBodyMessage('{"message":"rate limited"}')).toEqual({ message: 'rate limited' });
    expect(errorBodyMessage('{"status":"nope"}')).toBeNull();
    expect(errorBodyMessage('bad gateway')).toBeNull();
  });
});
