// A body over BODY_LIMIT_BYTES is answered 413 in the error shape, and the connection is closed only
// once the answer is written and the client is done sending: a client still sending a large body
// when the server answers (a busy client, or a busy server that answers late) reads the 413, never
// a reset connection.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.ts';

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
});
afterAll(async () => t?.stop());

interface Outcome {
  /** The answer as read, or the socket error that lost it. */
  answer: string;
  error: string | undefined;
}

/**
 * Sends POST /v2/calls/list with a `bytes`-long JSON body on a raw socket without reading anything
 * until all of it is written (or the write failed) and `settleMs` more have passed, as a client busy
 * sending would; then reads what the server sent.
 */
function sendOversized(
  url: string,
  key: string,
  bytes: number,
  framing: 'content-length' | 'chunked',
  settleMs: number,
): Promise<Outcome> {
  const { hostname, port } = new URL(url);
  const body = Buffer.from(JSON.stringify({ filter_criteria: { agent_id: ['x'.repeat(bytes)] } }));
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.pause();
    const chunks: Buffer[] = [];
    let error: string | undefined;
    socket.on('error', (e: NodeJS.ErrnoException) => (error ??= e.code ?? e.message));
    socket.on('close', () => resolve({ answer: Buffer.concat(chunks).toString('utf8'), error }));
    // The server closes the connection after a 413: one still open is a failure too.
    setTimeout(() => {
      error ??= 'still open after 5 s';
      socket.destroy();
    }, 5_000).unref();
    const head = [
      `POST /v2/calls/list HTTP/1.1`,
      `Host: ${hostname}:${port}`,
      `Authorization: Bearer ${key}`,
      'Content-Type: application/json',
    ];
    head.push(framing === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${body.length}`);
    socket.write(`${head.join('\r\n')}\r\n\r\n`);
    const pieces: Buffer[] = [];
    for (let at = 0; at < body.length; at += 64 * 1024) {
      const piece = body.subarray(at, at + 64 * 1024);
      pieces.push(
        framing === 'chunked'
          ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')])
          : piece,
      );
    }
    if (framing === 'chunked') pieces.push(Buffer.from('0\r\n\r\n'));
    // Piece by piece, as a client on a real network sends: the server answers while more is coming.
    const sendNext = () => {
      const piece = pieces.shift();
      if (piece === undefined || socket.destroyed) {
        setTimeout(() => {
          socket.on('data', (chunk: Buffer) => chunks.push(chunk));
          socket.resume();
        }, settleMs);
        return;
      }
      socket.write(piece, () => setTimeout(sendNext, 10));
    };
    sendNext();
  });
}

describe('bodies over the limit', () => {
  for (const framing of ['content-length', 'chunked'] as const) {
    it(`a client that sends a 2 MB body (${framing}) before reading anything gets 413 with the JSON error, not a reset connection`, async () => {
      for (let i = 0; i < 3; i++) {
        const outcome = await sendOversized(t.url, t.keyOf('acme'), 2 * 1024 * 1024, framing, 300);
        expect(outcome.error, outcome.answer).toBeUndefined();
        expect(outcome.answer).toMatch(/^HTTP\/1\.1 413 /);
        const json = outcome.answer.slice(outcome.answer.indexOf('\r\n\r\n') + 4);
        expect(JSON.parse(json)).toEqual({
          error: expect.any(String),
          details: expect.any(String),
          code: 'BODY_TOO_LARGE',
        });
      }
    }, 30_000);
  }
});
