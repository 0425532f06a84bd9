// The egress policy. Every connection a customer's configuration makes the service open (the
// model, HTTP tools, voice and recognition endpoints, webhooks) is checked after DNS, when it is
// opened, so a name that resolves to an internal address is refused as surely as the address
// itself, and the connection goes to the address that was checked. Refused: loopback, private,
// shared, link-local, unique-local, multicast and reserved ranges, the cloud metadata addresses
// (even when EGRESS_ALLOW lists them), and the service's own address but for its demo peer.
// EGRESS_ALLOW (CIDRs and host:port entries) opens exactly what it lists.
import { lookup } from 'node:dns/promises';
import { BlockList, isIP, isIPv4, isIPv6 } from 'node:net';
import { networkInterfaces } from 'node:os';
import { ConfigError } from '../config.ts';
import { CodedError } from '../errors.ts';

/** IPv4 addresses that are never public: a connection there reaches the service's own network. */
const INTERNAL_IPV4: readonly [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];

/**
 * IPv6 blocks that are not globally reachable, refused whole. ::/8 is refused whole, not only ::
 * and ::1: it holds the IPv4-compatible (::a.b.c.d) and IPv4-translated (::ffff:0:a.b.c.d) forms,
 * which reach the embedded IPv4 address on some stacks, and nothing public (the IPv4-mapped
 * ::ffff:0:0/96 is judged as its IPv4 address before this list is consulted). 2001::/23 (IETF
 * protocol assignments: Teredo, benchmarking, ORCHID, …) is refused whole too: its few anycast
 * services are no model or tool endpoint, and Teredo hides an IPv4 address we cannot judge.
 */
const INTERNAL_IPV6: readonly [string, number][] = [
  ['::', 8],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['100:0:0:1::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['3fff::', 20],
  ['5f00::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
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

export class EgressRefusedError extends CodedError<'EGRESS_REFUSED'> {
  constructor(message: string) {
    super('EGRESS_REFUSED', message);
  }
}

// One list per family: a BlockList judges an IPv4 address by its IPv6 rules too (as ::ffff:a.b.c.d
// or ::a.b.c.d), which would put every IPv4 address inside ::/8.
const internalV4 = new BlockList();
for (const [address, prefix] of INTERNAL_IPV4) internalV4.addSubnet(address, prefix, 'ipv4');
const internalV6 = new BlockList();
for (const [address, prefix] of INTERNAL_IPV6) internalV6.addSubnet(address, prefix, 'ipv6');
const metadata = new BlockList();
for (const [address, family] of METADATA_ADDRESSES) metadata.addAddress(address, family);

/**
 * An IP address in one spelling: IPv4 dotted as is; IPv6 without its zone id, through the URL
 * parser's host serialisation (lower case, compressed, any dotted tail as hex), so `::127.0.0.1`,
 * `0:0:0:0:0:0:7F00:1` and `::7f00:1` are one string. Null for anything that is not an address.
 */
export function canonicalAddress(address: string): string | null {
  const bare = unbracket(address.trim()).replace(/%.*$/, '');
  if (isIPv4(bare)) return bare;
  if (!isIPv6(bare)) return null;
  try {
    return unbracket(new URL(`http://[${bare}]/`).hostname);
  } catch {
    return null;
  }
}

/** The eight 16-bit groups of a canonical IPv6 address. */
function ipv6Groups(canonical: string): number[] {
  const [head = '', tail] = canonical.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const left = parse(head);
  if (tail === undefined) return left;
  const right = parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

const dotted = (high: number, low: number): string => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;

/**
 * The IPv4 address an IPv6 address stands for, judged in its place: IPv4-mapped ::ffff:a.b.c.d,
 * the well-known NAT64 prefix 64:ff9b::/96, and 6to4 2002:aabb:ccdd::/48. The other forms that
 * carry an IPv4 address (compatible, translated, local NAT64, Teredo) are refused whole above.
 */
function embeddedIpv4(canonical: string): string | null {
  if (!isIPv6(canonical)) return null;
  const g = ipv6Groups(canonical);
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return dotted(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return dotted(g[6]!, g[7]!);
  if (g[0] === 0x2002) return dotted(g[1]!, g[2]!);
  return null;
}

const family = (address: string): 'ipv4' | 'ipv6' => (isIPv4(address) ? 'ipv4' : 'ipv6');
const unbracket = (host: string): string => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);
const defaultPort = (protocol: string): number => (protocol === 'https:' ? 443 : 80);
/**
 * `host:port` as EGRESS_ALLOW and the own-address list keep it: an address in its one spelling, a name in lower case.
 */
const hostKey = (host: string, port: number): string =>
  `${canonicalAddress(host) ?? unbracket(host).toLowerCase()}:${port}`;

export class EgressPolicy {
  /** EGRESS_ALLOW's CIDRs, one list per family (see internalV4). */
  private readonly allowedRanges = { ipv4: new BlockList(), ipv6: new BlockList() };
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
        if (prefix > (isIPv4(cidr[1]!) ? 32 : 128))
          throw new ConfigError(`EGRESS_ALLOW: ${entry} has a prefix longer than its address`);
        this.allowedRanges[family(cidr[1]!)].addSubnet(cidr[1]!, prefix, family(cidr[1]!));
        continue;
      }
      const hostPort = /^(\[[0-9a-fA-F:.]+\]|[^:\s/[\]]+):(\d{1,5})$/.exec(entry);
      if (!hostPort || Number(hostPort[2]) < 1 || Number(hostPort[2]) > 65535) {
        throw new ConfigError(
          `EGRESS_ALLOW: ${JSON.stringify(entry)} is neither a CIDR (10.0.0.0/8) nor host:port (127.0.0.1:11434)`,
        );
      }
      this.allowedHosts.add(hostKey(hostPort[1]!, Number(hostPort[2])));
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
      this.ownHosts.add(hostKey(url.hostname, Number(url.port) || defaultPort(url.protocol)));
    }
    const listening = urls.length > 0 ? new URL(urls[urls.length - 1]!) : null;
    this.ownPort = listening ? Number(listening.port) || defaultPort(listening.protocol) : null;
  }

  /** A request about to go out: only http(s), and of the service's own address only its demo peer. Why not, or null. */
  requestRefusal(url: URL): string | null {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return `${url.protocol} is not http or https`;
    if (this.ownOrigins.has(url.origin) && !url.pathname.startsWith(OWN_PATH_ALLOWED))
      return 'the service’s own address';
    return null;
  }

  /** One address `host:port` resolved to: why connecting there is refused, or null. */
  addressRefusal(host: string, address: string, port: number): string | null {
    const canonical = canonicalAddress(address);
    if (canonical === null) return 'not an IP address';
    const checked = embeddedIpv4(canonical) ?? canonical;
    const kind = family(checked);
    if (metadata.check(checked, kind)) return 'a cloud metadata address';
    if (
      this.allowedHosts.has(hostKey(host, port)) ||
      this.allowedHosts.has(`${checked}:${port}`) ||
      this.allowedHosts.has(`${canonical}:${port}`)
    )
      return null;
    if (this.allowedRanges[kind].check(checked, kind)) return null;
    // The demo peer on the service's own address: requestRefusal has already held it to its path.
    if (this.ownHosts.has(hostKey(host, port))) return null;
    if ((kind === 'ipv4' ? internalV4 : internalV6).check(checked, kind)) return 'an internal address';
    if (port === this.ownPort && isLocalAddress(checked)) return 'the service’s own address';
    return null;
  }

  /** Before any DNS: a literal address in `url` that the policy refuses (agent fields), or null. */
  literalRefusal(url: string): string | null {
    let parsed: URL;
    try {
      // A provider's ws: or wss: address is judged as the http: or https: URL of the same place (websocket.ts).
      parsed = new URL(/^wss?:/i.test(url) ? url.replace(/^ws/i, 'http') : url);
    } catch {
      return null;
    }
    // A WebSocket address is judged as the HTTP address of the same place, as net/websocket.ts opens it.
    if (parsed.protocol === 'ws:' || parsed.protocol === 'wss:') parsed = new URL(url.replace(/^ws/i, 'http'));
    const byRequest = this.requestRefusal(parsed);
    if (byRequest) return byRequest;
    const host = unbracket(parsed.hostname);
    if (!isIP(host)) return null;
    return this.addressRefusal(host, host, Number(parsed.port) || defaultPort(parsed.protocol));
  }

  /** Resolves `host` and checks every address it gives; the address to connect to, or EgressRefusedError. */
  async resolve(host: string, port: number): Promise<string> {
    const bare = unbracket(host);
    const addresses = isIP(bare)
      ? [bare]
      : (await lookup(bare, { all: true, order: 'ipv4first' })).map((a) => a.address);
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
    for (const info of list ?? []) if (canonicalAddress(info.address) === address) return true;
  }
  return false;
}
