import type { NetworkInterfaceInfo } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { parseSipListen } from '../../../src/config.ts';
import { publicHostFor, startSipService } from '../../../src/carriers/sip/listen.ts';
import { header, type SipResponse } from '../../../src/carriers/sip/message.ts';
import { RtpPortPool } from '../../../src/carriers/sip/rtp-ports.ts';
import type { SipCall } from '../../../src/carriers/sip/user-agent.ts';
import { ManualTimers } from '../../../src/timers.ts';
import { requestText, tcpPeer, udpPeer, until } from '../../helpers/sip-peer.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('SIP_PUBLIC_HOST', () => {
  const nic = (address: string, family: 'IPv4' | 'IPv6', internal: boolean) =>
    ({ address, family, internal, netmask: '', mac: '', cidr: null }) as NetworkInterfaceInfo;
  const interfaces = {
    lo: [nic('127.0.0.1', 'IPv4', true)],
    eth0: [nic('2001:db8::5', 'IPv6', false), nic('192.0.2.5', 'IPv4', false)],
  };

  it('is the configured one, else the listening host, else the first non-loopback IPv4 address for a wildcard', () => {
    const wildcard = parseSipListen('udp:0.0.0.0:5060');
    expect(publicHostFor(wildcard, '203.0.113.9', interfaces)).toBe('203.0.113.9');
    expect(publicHostFor(parseSipListen('udp:0.0.0.0:5060,tcp:198.51.100.4:5060'), undefined, interfaces)).toBe(
      '198.51.100.4',
    );
    expect(publicHostFor(wildcard, undefined, interfaces)).toBe('192.0.2.5');
    expect(publicHostFor(wildcard, undefined, { lo: interfaces.lo })).toBe('127.0.0.1');
  });
});

describe('SIP service', () => {
  async function start() {
    const calls: SipCall[] = [];
    const service = await startSipService<string>({
      listen: parseSipListen('udp:127.0.0.1:0,tcp:127.0.0.1:0'),
      publicHost: '127.0.0.1',
      ports: new RtpPortPool({ low: 47800, high: 47809 }, '127.0.0.1'),
      timers: new ManualTimers(0),
      random: (bytes) => '5a'.repeat(bytes),
      admit: () => ({ verdict: 'accept', value: 'trunk' }),
      onCall: (call) => calls.push(call),
    });
    cleanups.push(() => service.close());
    cleanups.push(() => {
      for (const call of calls) call.transport.close('agent_hangup');
    });
    return { service, calls };
  }

  it('answers OPTIONS over UDP and over TCP on the ports it bound', async () => {
    const { service } = await start();
    const udp = await udpPeer(() => service.ports.udp!);
    cleanups.push(() => udp.close());
    const tcp = await tcpPeer(service.ports.tcp!);
    cleanups.push(() => tcp.close());
    udp.send(requestText({ method: 'OPTIONS', branch: 'z9hG4bKu', viaPort: udp.port }));
    tcp.send(requestText({ method: 'OPTIONS', branch: 'z9hG4bKt', viaPort: tcp.port, transport: 'TCP' }));
    await until(() => udp.received.length === 1 && tcp.received.length === 1);
    expect([(udp.received[0] as SipResponse).status, (tcp.received[0] as SipResponse).status]).toEqual([200, 200]);
  });

  it('answers an INVITE over TCP on its connection, with a Contact that says transport=tcp', async () => {
    const { service, calls } = await start();
    const tcp = await tcpPeer(service.ports.tcp!);
    cleanups.push(() => tcp.close());
    const sdp = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\n';
    tcp.send(
      requestText({
        method: 'INVITE',
        branch: 'z9hG4bKtcp',
        viaPort: tcp.port,
        transport: 'TCP',
        extra: [`Contact: <sip:far@127.0.0.1:${tcp.port};transport=tcp>`, 'Content-Type: application/sdp'],
        body: sdp,
      }),
    );
    await until(() => tcp.received.length === 3);
    expect(tcp.received.map((m) => (m as SipResponse).status)).toEqual([100, 180, 200]);
    expect(header(tcp.received[2]!, 'contact')).toBe(`<sip:127.0.0.1:${service.ports.tcp};transport=tcp>`);
    expect(calls).toHaveLength(1);
  });
});
