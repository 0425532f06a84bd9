// The media WebSockets before a call is identified: a socket proves which call it belongs to in its
// first messages or is closed, and only so many may wait to do so at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { PENDING_STREAM_DEFAULTS } from '../../src/carriers/pending-streams.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
});
afterAll(async () => t.stop());

const wsUrl = (path: string) => `${t.url.replace('http', 'ws')}${path}`;

function open(path: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(wsUrl(path));
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
  });
}

const closed = (socket: WebSocket) =>
  new Promise<number>((resolve) => {
    if (socket.readyState === WebSocket.CLOSED) resolve(-1);
    socket.once('close', (code) => resolve(code));
  });

describe('media sockets before start', () => {
  for (const message of ['not json at all', '{"event":"media","media":{"payload":"***"}}', '{"event":"surprise"}']) {
    it(`a malformed message before start closes a Twilio stream with 1008: ${message}`, async () => {
      const socket = await open('/media/twilio');
      const code = closed(socket);
      socket.send(message);
      expect(await code).toBe(1008);
    });
  }

  it('a well-formed connected message before start keeps the Twilio stream open', async () => {
    const socket = await open('/media/twilio');
    socket.send('{"event":"connected","protocol":"Call","version":"1.0.0"}');
    await new Promise((r) => setTimeout(r, 200));
    expect(socket.readyState).toBe(WebSocket.OPEN);
    socket.close();
  });

  it(`at most ${PENDING_STREAM_DEFAULTS.max} sockets wait to start across both routes; the next is closed with 1013, and a slot frees when one closes`, async () => {
    const waiting: WebSocket[] = [];
    try {
      for (let i = 0; i < PENDING_STREAM_DEFAULTS.max; i++)
        waiting.push(await open(i % 2 ? '/media/web' : '/media/twilio'));
      const over = await open('/media/web');
      expect(await closed(over)).toBe(1013);
      const first = waiting.shift()!;
      const gone = closed(first);
      first.close();
      await gone;
      // The server hears the close a moment after the client does.
      let admitted: WebSocket | undefined;
      for (let i = 0; i < 50 && !admitted; i++) {
        const next = await open('/media/twilio');
        const code = await Promise.race([closed(next), new Promise<null>((r) => setTimeout(() => r(null), 100))]);
        if (code === null) admitted = next;
      }
      expect(admitted).toBeDefined();
      waiting.push(admitted!);
    } finally {
      for (const socket of waiting) socket.terminate();
    }
  }, 30_000);
});
