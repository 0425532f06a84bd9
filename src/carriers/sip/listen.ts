// Where SIP listens and what address it writes about itself (issue 37, "Listening"):
// `SIP_LISTEN` (read by src/config.ts) names one `udp:HOST:PORT` / `tcp:HOST:PORT` per
// transport; `SIP_PUBLIC_HOST` is the address written into Contact, Via and SDP, by default the
// listening host, or the machine's first non-loopback address when that host is a wildcard
// (0.0.0.0, ::). `startSipService` puts the listeners, the transaction layer and the user agent
// together.
import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';
import { isIPv6 } from 'node:net';
import type { SipListenEntry } from '../../config.ts';
import type { RtpPortPool } from './rtp-ports.ts';
import { SipUserAgent, type SipUserAgentOptions } from './user-agent.ts';
import { SipSocketWire } from './wire.ts';

const WILDCARDS = new Set(['0.0.0.0', '::']);

/**
 * SIP_PUBLIC_HOST when set; else the first listener's host unless it is a wildcard; else the
 * machine's first non-internal IPv4 address (then IPv6); else 127.0.0.1.
 */
export function publicHostFor(
  listen: readonly SipListenEntry[],
  configured: string | undefined,
  interfaces: NodeJS.Dict<NetworkInterfaceInfo[]> = networkInterfaces(),
): string {
  if (configured) return configured;
  const bound = listen.find((e) => !WILDCARDS.has(e.host));
  if (bound) return bound.host;
  const addresses = Object.values(interfaces)
    .flatMap((list) => list ?? [])
    .filter((a) => !a.internal);
  return addresses.find((a) => a.family === 'IPv4')?.address ?? addresses[0]?.address ?? '127.0.0.1';
}

export interface SipService<T> {
  ua: SipUserAgent<T>;
  wire: SipSocketWire;
  /** The ports bound (the ones asked for, or those taken for port 0). */
  ports: { udp?: number; tcp?: number };
  close(): Promise<void>;
}

/** Listens on each entry and answers through one user agent. */
export async function startSipService<T>(
  o: Omit<SipUserAgentOptions<T>, 'wire' | 'sentBy' | 'publicHost'> & {
    listen: readonly SipListenEntry[];
    publicHost: string;
    ports: RtpPortPool;
    onError?: (error: unknown) => void;
  },
): Promise<SipService<T>> {
  const udp = o.listen.find((e) => e.transport === 'udp');
  const tcp = o.listen.find((e) => e.transport === 'tcp');
  let ua: SipUserAgent<T> | undefined;
  const wire = await SipSocketWire.listen({
    udp,
    tcp,
    onMessage: (message, from) => ua?.receive(message, from),
    onError: (error) => o.onError?.(error),
  });
  const bound = wire.address();
  const host = isIPv6(o.publicHost) ? `[${o.publicHost}]` : o.publicHost;
  ua = new SipUserAgent<T>({
    ...o,
    wire,
    sentBy: (transport) => `${host}:${bound[transport] ?? bound.udp ?? bound.tcp}`,
  });
  return { ua, wire, ports: bound, close: () => wire.close() };
}
