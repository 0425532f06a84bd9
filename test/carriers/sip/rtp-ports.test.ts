import { createSocket, type Socket } from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { RtpPortPool, type BoundRtpPort } from '../../../src/carriers/sip/rtp-ports.ts';

const held: BoundRtpPort[] = [];
const others: Socket[] = [];
afterEach(() => {
  for (const port of held.splice(0)) port.release();
  for (const socket of others.splice(0)) socket.close();
});

async function bindAll(pool: RtpPortPool, count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < count; i++) {
    const bound = await pool.bind();
    held.push(bound);
    ports.push(bound.port);
  }
  return ports;
}

describe('RTP port pool', () => {
  it('hands out even ports in turn, each a bound socket, and SIP_NO_RTP_PORT once all are taken', async () => {
    const pool = new RtpPortPool({ low: 47100, high: 47105 }, '127.0.0.1');
    expect(pool.capacity).toBe(3);
    expect(await bindAll(pool, 3)).toEqual([47100, 47102, 47104]);
    expect(held.every((b) => b.socket.address().port === b.port)).toBe(true);
    await expect(pool.bind()).rejects.toMatchObject({ code: 'SIP_NO_RTP_PORT' });
  });

  it('does not give a port just released to the next call while others are free', async () => {
    const pool = new RtpPortPool({ low: 47110, high: 47115 }, '127.0.0.1');
    const [first] = await bindAll(pool, 1);
    held.shift()!.release();
    expect(pool.used).toBe(0);
    expect(await bindAll(pool, 3)).toEqual([47112, 47114, first]);
  });

  it('passes over a port another process holds', async () => {
    const other = createSocket('udp4');
    others.push(other);
    await new Promise<void>((resolve) => other.bind(47120, '127.0.0.1', resolve));
    const pool = new RtpPortPool({ low: 47120, high: 47123 }, '127.0.0.1');
    expect(await bindAll(pool, 1)).toEqual([47122]);
  });
});
