import { createSocket, type Socket } from 'node:dgram';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { RtpEndpoint } from '../../../src/carriers/sip/rtp-endpoint.ts';
import { writeRtp, type RtpPacket } from '../../../src/carriers/sip/rtp-packet.ts';
import { RtpPortPool, type BoundRtpPort } from '../../../src/carriers/sip/rtp-ports.ts';
import { ManualTimers } from '../../../src/timers.ts';

const open: (() => void)[] = [];
afterEach(() => {
  for (const close of open.splice(0)) close();
});

async function udp(): Promise<Socket> {
  const socket = createSocket('udp4');
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  open.push(() => socket.close());
  return socket;
}

const rtp = (sequence: number) =>
  writeRtp({ payloadType: 0, marker: false, sequence, timestamp: sequence * 160, ssrc: 7 }, new Uint8Array(160));

async function setUp(mediaTimeoutMs = 30_000) {
  const pool = new RtpPortPool({ low: 47200, high: 47209 }, '127.0.0.1');
  const bound: BoundRtpPort = await pool.bind();
  open.push(() => bound.release());
  const timers = new ManualTimers();
  const heard: RtpPacket[] = [];
  let timedOut = 0;
  const endpoint = new RtpEndpoint({
    socket: bound.socket,
    timers,
    onPacket: (p) => heard.push(p),
    onMediaTimeout: () => timedOut++,
    mediaTimeoutMs,
  });
  open.push(() => endpoint.close());
  const far = await udp();
  const intruder = await udp();
  endpoint.setRemote({ address: '127.0.0.1', port: far.address().port });
  return { bound, timers, heard, endpoint, far, intruder, timedOut: () => timedOut };
}

/** Waits (2 s at most) until `done` holds. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
}

/** A last packet from the far side, waited for: on loopback, everything sent before it has been handled. */
async function settle(far: Socket, port: number, heard: RtpPacket[]): Promise<void> {
  const before = heard.length;
  far.send(rtp(9999), port, '127.0.0.1');
  await until(() => heard.length > before);
}

describe('RTP endpoint', () => {
  it('hears only the negotiated address and port: packets from anywhere else are counted and dropped', async () => {
    const { bound, heard, endpoint, far, intruder } = await setUp();
    intruder.send(rtp(1), bound.port, '127.0.0.1');
    far.send(rtp(2), bound.port, '127.0.0.1');
    await settle(far, bound.port, heard);
    expect(heard.map((p) => p.sequence)).toEqual([2, 9999]);
    expect(endpoint.stats).toMatchObject({ received: 2, ignored: 1 });
  });

  it('drops datagrams from the negotiated address that are not RTP', async () => {
    const { bound, heard, endpoint, far } = await setUp();
    far.send(Buffer.from('hello'), bound.port, '127.0.0.1');
    await settle(far, bound.port, heard);
    expect(endpoint.stats).toMatchObject({ received: 1, malformed: 1 });
  });

  it('sends from the port it receives on (symmetric RTP), to the negotiated address', async () => {
    const { bound, endpoint, far } = await setUp();
    const arrived = once(far, 'message');
    endpoint.send(rtp(5));
    const [datagram, from] = (await arrived) as [Buffer, { port: number }];
    expect(from.port).toBe(bound.port);
    expect(datagram.readUInt16BE(2)).toBe(5);
  });

  it('ends the call when the negotiated address sends nothing for the media timeout, whatever others send', async () => {
    const { bound, heard, timers, endpoint, far, intruder, timedOut } = await setUp(1000);
    await settle(far, bound.port, heard);
    timers.advance(900);
    intruder.send(rtp(1), bound.port, '127.0.0.1');
    await until(() => endpoint.stats.ignored === 1);
    expect(timedOut()).toBe(0);
    timers.advance(100);
    expect(timedOut()).toBe(1);
  });

  it('does not time out while the far side holds the call', async () => {
    const { timers, endpoint, timedOut } = await setUp(1000);
    endpoint.holdTimeout();
    timers.advance(10_000);
    expect(timedOut()).toBe(0);
    endpoint.resumeTimeout();
    timers.advance(1000);
    expect(timedOut()).toBe(1);
  });
});
