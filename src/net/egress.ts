// The egress policy. Every connection a customer's configuration makes the service open (the
// model, HTTP tools, voice and recognition endpoints, webhooks) is checked after DNS, when it is
// opened, so a name that resolves to an internal address is refused as surely as the address
// itself, and the connection goes to the address that was checked. Refused: loopback, private,
// shared, link-local, unique-local, multicast and reserved ranges, the cloud metadata addresses
// (even when EGRESS_ALLOW lists them), and the service's own address but for its demo peer.
// EGRESS_ALLOW (CIDRs and host:port entries) opens exactly what it lists.
import { lookup } from 'node:dns/promises';
import { BlockList, isIP, isIPv4 } from 'node:net';
import { networkInterfaces } from 'node:os';
import { ConfigError } from '../config.ts';

/** Addresses that are never public: a connection there reaches the service's own network. */
const INTERNAL_RANGES: readonly [string, number, 'ipv4' | 'ipv6'][] = [
  ['0.0.0.0', 8, 'ipv4'],
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'],
  ['192.0.2.0', 24, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['198.51.100.0', 24, 'ipv4'],
  ['203.0.113.0', 24, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['240.0.0.0', 4, 'ipv4'],
  ['::', 128, 'ipv6'],
  ['::1', 128, 'ipv6'],
  ['100::', 64, 'ipv6'],
  ['2001:db8::', 32, 'ipv6'],
  ['fc00::', 7, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
];

/** Cloud metadata services (AWS, ECS, GCP, Azure, Alibaba): refused whatever EGRESS_ALLOW says. */
const METADATA_ADDRESSES: readonly [string, 'ipv4' | 'ipv6'][] = [
  ['169.254.169.254', 'ipv4'],
  ['169.254.170.2', 'ipv4'],
  ['100.100.100.200', 'ipv4'],
  ['fd00:ec2::254', 'ipv6'],
];

/** The service's demo peer: the one path of its own address the demo agent may reach. */
const OWN_PATH_ALLOWED = '/demo/';

export class EgressRefusedError extends Error {
  override readonly name = 'EgressRefusedError';
  readonly code = 'EGRESS_REFUSED';
}

function blockList(ranges: readonly (readonly [string, number, 'ipv4' | 'ipv6'])[]): BlockList {
  const list = new BlockList();
  for (const [address, prefix, family] of ranges) list.addSubnet(address, prefix, family);
  return list;
}

const internal = blockList(INTERNAL_RANGES);
const metadata = new BlockList();
for (const [address, family] of METADATA_ADDRESSES) metadata.addAddress(address, family);

/** An IPv4 address carried inside IPv6 (::ffff:a.b.c.d, 64:ff9b::a.b.c.d): judged as that IPv4 address. */
function embeddedIpv4(address: string): string | null {
  const match = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (match) return match[1]!;
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return null;
  const high = Number.parseInt(hex[1]!, 16);
  const low = Number.parseInt(hex[2]!, 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

const family = (address: string): 'ipv4' | 'ipv6' => (isIPv4(address) ? 'ipv4' : 'ipv6');
const unbracket = (host: string): string => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);
const defaultPort = (protocol: string): number => (protocol === 'https:' ? 443 : 80);

export class EgressPolicy {
  private readonly allowedRanges = new BlockList();
  /** host:port entries of EGRESS_ALLOW, lower-cased, IPv6 without brackets. */
  private readonly allowedHosts = new Set<string>();
  /** The service's own origins (PUBLIC_URL, the listening address), once it listens. */
  private readonly ownOrigins = new Set<string>();
  private readonly ownHosts = new Set<string>();
  private ownPort: number | null = null;

  /** `allow`: EGRESS_ALLOW's entries, `10.1.0.0/16` or `127.0.0.1:11434` (`[::1]:11434`, `name:port`). */
  constructor(allow: readonly string[] = []) {
    for (const raw of allow) {
      const entry = raw.trim();
      if (entry === '') continue;
      const cidr = /^(.+)\/(\d{1,3})$/.exec(entry);
      if (cidr && isIP(cidr[1]!)) {
        const prefix = Number(cidr[2]);
        if (prefix > (isIPv4(cidr[1]!) ? 32 : 128)) throw new ConfigError(`EGRESS_ALLOW: ${entry} has a prefix longer than its address`);
        this.allowedRanges.addSubnet(cidr[1]!, prefix, family(cidr[1]!));
        continue;
      }
      const hostPort = /^(\[[0-9a-fA-F:.]+\]|[^:\s/[\]]+):(\d{1,5})$/.exec(entry);
      if (!hostPort || Number(hostPort[2]) < 1 || Number(hostPort[2]) > 65535) {
        throw new ConfigError(`EGRESS_ALLOW: ${JSON.stringify(entry)} is neither a CIDR (10.0.0.0/8) nor host:port (127.0.0.1:11434)`);
      }
      this.allowedHosts.add(`${unbracket(hostPort[1]!).toLowerCase()}:${Number(hostPort[2])}`);
    }
  }

  /** EGRESS_ALLOW as the environment gives it: comma-separated entries. */
  static fromEnv(value: string | undefined): EgressPolicy {
    return new EgressPolicy(value ? value.split(',') : []);
  }

  /** The service listens: its own addresses are refused from now on, but for its demo peer. */
  ownAddresses(urls: readonly string[]): void {
    for (const raw of urls) {
      const url = new URL(raw);
      this.ownOrigins.add(url.origin);
      this.ownHosts.add(`${unbracket(url.hostname).toLowerCase()}:${Number(url.port) || defaultPort(url.protocol)}`);
    }
    const listening = urls.length > 0 ? new URL(urls[urls.length - 1]!) : null;
    this.ownPort = listening ? Number(listening.port) || defaultPort(listening.protocol) : null;
  }

  /** A request about to go out: only http(s), and of the service's own address only its demo peer. Why not, or null. */
  requestRefusal(url: URL): string | null {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return `${url.protocol} is not http or https`;
    if (this.ownOrigins.has(url.origin) && !url.pathname.startsWith(OWN_PATH_ALLOWED)) return 'the service’s own address';
    return null;
  }

  /** One address `host:port` resolved to: why connecting there is refused, or null. */
  addressRefusal(host: string, address: string, port: number): string | null {
    const v4 = embeddedIpv4(address);
    const checked = v4 ?? address;
    const kind = family(checked);
    if (metadata.check(checked, kind)) return 'a cloud metadata address';
    if (this.allowedHosts.has(`${unbracket(host).toLowerCase()}:${port}`) || this.allowedHosts.has(`${checked}:${port}`)) return null;
    if (this.allowedRanges.check(checked, kind)) return null;
    // The demo peer on the service's own address: requestRefusal has already held it to its path.
    if (this.ownHosts.has(`${unbracket(host).toLowerCase()}:${port}`)) return null;
    if (internal.check(checked, kind)) return 'an internal address';
    if (port === this.ownPort && isLocalAddress(checked)) return 'the service’s own address';
    return null;
  }

  /** Before any DNS: a literal address in `url` that the policy refuses (agent fields), or null. */
  literalRefusal(url: string): string | null {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return null;
    }
    const byRequest = this.requestRefusal(parsed);
    if (byRequest) return byRequest;
    const host = unbracket(parsed.hostname);
    if (!isIP(host)) return null;
    return this.addressRefusal(host, host, Number(parsed.port) || defaultPort(parsed.protocol));
  }

  /** Resolves `host` and checks every address it gives; the address to connect to, or EgressRefusedError. */
  async resolve(host: string, port: number): Promise<string> {
    const bare = unbracket(host);
    const addresses = isIP(bare) ? [bare] : (await lookup(bare, { all: true, order: 'ipv4first' })).map((a) => a.address);
    for (const address of addresses) {
      const refusal = this.addressRefusal(bare, address, port);
      // A name with an internal address among public ones is refused whole: no retrying until a lucky pick.
      if (refusal) throw new EgressRefusedError(`egress refused: ${bare}:${port} is ${refusal}`);
    }
    const first = addresses[0];
    if (first === undefined) throw new EgressRefusedError(`egress refused: ${bare} has no address`);
    return first;
  }
}

/** One of this machine's own interface addresses. */
function isLocalAddress(address: string): boolean {
  for (const list of Object.values(networkInterfaces())) {
    for (const info of list ?? []) if (info.address === address) return true;
  }
  return false;
}
