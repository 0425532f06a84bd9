import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { TwilioStreamCaller } from '../../../src/carriers/sim/twilio-stream.ts';

const servers: WebSocketServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((resolve) => s.close(resolve));
});

async function mediaFrames(): Promise<{ url: string; times: number[] }> {
  const times: number[] = [];
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  servers.push(server);
  await new Promise((resolve) => server.once('listening', resolve));
  server.on('connection', (socket) =>
    socket.on('message', (data) => {
      if (String(data).startsWith('{"event":"media"')) times.push(performance.now());
    }),
  );
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`, times };
}

describe('TwilioStreamCaller', () => {
  it('knows when each of its last 64 frames left, and nothing about older or unsent ones', async () => {
    const { url, times } = await mediaFrames();
    const caller = new TwilioStreamCaller({ url, customParameters: {}, history: false });
    await caller.connect();
    await caller.pause(1400); // 70 frames of silence
    const sent = caller.framesSent;
    expect(sent).toBeGreaterThanOrEqual(70);
    expect(caller.frameSentAt(sent)).toBeUndefined();
    expect(caller.frameSentAt(sent - 65)).toBeUndefined();
    expect(caller.frameSentAt(-1)).toBeUndefined();
    const kept = Array.from({ length: 64 }, (_, i) => caller.frameSentAt(sent - 64 + i)!);
    // In send order, each before the far side got it.
    for (let i = 1; i < kept.length; i++) expect(kept[i]).toBeGreaterThan(kept[i - 1]!);
    await caller.hangUp();
    expect(times.length).toBeGreaterThanOrEqual(sent);
    for (let i = 0; i < kept.length; i++) expect(kept[i]).toBeLessThanOrEqual(times[sent - 64 + i]!);
  });
});
