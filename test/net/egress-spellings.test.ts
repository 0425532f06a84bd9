// Every spelling of an address gets the verdict of the address: IPv6 written compressed or in full,
// with leading zeros or not, in either case, with a dotted IPv4 tail or in hex, with a zone id (as
// DNS may give it), and IPv4 carried inside IPv6 in each of its forms. Property-based: fast-check
// generates the addresses and their spellings.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalAddress, EgressPolicy } from '../../src/net/egress.ts';
import { FUZZ_SEED, runs } from '../helpers/fuzz.ts';

const policy = new EgressPolicy();
const settings = { numRuns: runs(400), seed: FUZZ_SEED };

type Groups = number[];

/** How one IPv6 address is written: which zero run `::` replaces, padding and case per group, dotted tail, zone id. */
interface Spelling {
  compress: number;
  pad: boolean[];
  upper: boolean[];
  dottedTail: boolean;
  zone: string | null;
}

const spellingArb: fc.Arbitrary<Spelling> = fc.record({
  compress: fc.nat({ max: 40 }),
  pad: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
  upper: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
  dottedTail: fc.boolean(),
  zone: fc.option(fc.constantFrom('eth0', '1', 'en0'), { nil: null }),
});

/** `groups` written as `s` says (without zone id unless `withZone`). */
function spell(groups: Groups, s: Spelling, withZone: boolean): string {
  const hexCount = s.dottedTail ? 6 : 8;
  const units = groups.slice(0, hexCount).map((g, i) => {
    const hex = s.pad[i] ? g.toString(16).padStart(4, '0') : g.toString(16);
    return s.upper[i] ? hex.toUpperCase() : hex;
  });
  const tail = s.dottedTail ? [`${groups[6]! >> 8}.${groups[6]! & 255}.${groups[7]! >> 8}.${groups[7]! & 255}`] : [];
  const runsOfZeros: [number, number][] = [];
  for (let start = 0; start < hexCount; start++) {
    for (let end = start + 1; end <= hexCount && groups[end - 1] === 0; end++) runsOfZeros.push([start, end]);
  }
  const pick = s.compress % (runsOfZeros.length + 1);
  let text: string;
  if (pick === 0) {
    text = [...units, ...tail].join(':');
  } else {
    const [start, end] = runsOfZeros[pick - 1]!;
    text = `${units.slice(0, start).join(':')}::${[...units.slice(end), ...tail].join(':')}`;
  }
  return withZone && s.zone ? `${text}%${s.zone}` : text;
}

const v4Groups = (v4: string): [number, number] => {
  const [a, b, c, d] = v4.split('.').map(Number) as [number, number, number, number];
  return [(a << 8) | b, (c << 8) | d];
};

/** An IPv4 address inside a range, any host part. */
const v4In = (base: string, prefix: number): fc.Arbitrary<string> =>
  fc.nat({ max: 2 ** (32 - prefix) - 1 }).map((host) => {
    const n =
      (base
        .split('.')
        .map(Number)
        .reduce((acc, o) => acc * 256 + o, 0) +
        host) >>>
      0;
    return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  });

const internalV4 = fc.oneof(
  v4In('127.0.0.0', 8),
  v4In('10.0.0.0', 8),
  v4In('169.254.0.0', 16),
  v4In('172.16.0.0', 12),
  v4In('192.168.0.0', 16),
  v4In('100.64.0.0', 10),
  v4In('0.0.0.0', 8),
  fc.constantFrom('169.254.169.254', '169.254.170.2', '100.100.100.200'),
);

/** Every way IPv6 carries an IPv4 address, as groups. */
const EMBEDDINGS: Record<string, (high: number, low: number, extra: number) => Groups> = {
  'IPv4-compatible ::a.b.c.d': (h, l) => [0, 0, 0, 0, 0, 0, h, l],
  'IPv4-mapped ::ffff:a.b.c.d': (h, l) => [0, 0, 0, 0, 0, 0xffff, h, l],
  'IPv4-translated ::ffff:0:a.b.c.d': (h, l) => [0, 0, 0, 0, 0xffff, 0, h, l],
  'NAT64 64:ff9b::/96': (h, l) => [0x64, 0xff9b, 0, 0, 0, 0, h, l],
  'local NAT64 64:ff9b:1::/48': (h, l, x) => [0x64, 0xff9b, 1, x, 0, 0, h, l],
  '6to4 2002::/16': (h, l, x) => [0x2002, h, l, x, 0, 0, 0, 1],
  'Teredo 2001::/32': (h, l, x) => [0x2001, 0, h, l, 0, x, ~h & 0xffff, ~l & 0xffff],
};

/** IPv6 blocks that are not globally reachable, as [first groups, prefix length]. */
const RESERVED_V6: [Groups, number][] = [
  [[0, 0, 0, 0, 0, 0, 0, 0], 8],
  [[0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48],
  [[0x100, 0, 0, 0, 0, 0, 0, 0], 64],
  [[0x2001, 0, 0, 0, 0, 0, 0, 0], 23],
  [[0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32],
  [[0x3fff, 0, 0, 0, 0, 0, 0, 0], 20],
  [[0xfc00, 0, 0, 0, 0, 0, 0, 0], 7],
  [[0xfe80, 0, 0, 0, 0, 0, 0, 0], 10],
  [[0xfec0, 0, 0, 0, 0, 0, 0, 0], 10],
  [[0xff00, 0, 0, 0, 0, 0, 0, 0], 8],
];

/** An address of the block: its prefix bits kept, the rest random (sparse, so `::` has zero runs to take). */
const inBlock = ([base, prefix]: [Groups, number]): fc.Arbitrary<Groups> =>
  fc
    .array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0xffff })), { minLength: 8, maxLength: 8 })
    .map((random) =>
      base.map((g, i) => {
        const kept = Math.max(0, Math.min(16, prefix - i * 16));
        const mask = kept === 0 ? 0 : (0xffff << (16 - kept)) & 0xffff;
        return (g & mask) | (random[i]! & ~mask & 0xffff);
      }),
    );

const verdicts = (groups: Groups, s: Spelling) => {
  const literal = spell(groups, s, false);
  return {
    literal,
    atCreation: policy.literalRefusal(`http://[${literal}]:8443/v1`),
    atConnect: policy.addressRefusal('models.example.com', spell(groups, s, true), 8443),
  };
};

describe('the egress policy judges an address, not its spelling', () => {
  it('refuses the four spellings of issue 39 at creation and at connect time', () => {
    for (const address of ['::127.0.0.1', '::169.254.169.254', '::ffff:0:127.0.0.1', '::ffff:0:169.254.169.254']) {
      expect(policy.literalRefusal(`http://[${address}]/v1`), address).not.toBeNull();
      expect(policy.addressRefusal('models.example.com', address, 443), address).not.toBeNull();
    }
  });

  it('refuses an internal or metadata IPv4 address in every IPv6 form that carries it, however it is spelled', () => {
    fc.assert(
      fc.property(
        internalV4,
        fc.constantFrom(...Object.keys(EMBEDDINGS)),
        fc.integer({ min: 0, max: 0xffff }),
        spellingArb,
        (v4, form, extra, s) => {
          const [high, low] = v4Groups(v4);
          const { literal, atCreation, atConnect } = verdicts(EMBEDDINGS[form]!(high, low, extra), s);
          expect(atCreation, `${form}: ${literal}`).not.toBeNull();
          expect(atConnect, `${form}: ${literal}`).not.toBeNull();
        },
      ),
      settings,
    );
  });

  it('refuses every address of the IPv6 blocks that are not globally reachable, however it is spelled', () => {
    fc.assert(
      fc.property(fc.constantFrom(...RESERVED_V6).chain(inBlock), spellingArb, (groups, s) => {
        const { literal, atCreation, atConnect } = verdicts(groups, s);
        expect(atCreation, literal).not.toBeNull();
        expect(atConnect, literal).not.toBeNull();
      }),
      settings,
    );
  });

  it('gives every spelling of any address the verdict of its plain form, and one canonical form', () => {
    const anyAddress = fc.oneof(
      fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 }),
      fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0xffff })), { minLength: 8, maxLength: 8 }),
    );
    fc.assert(
      fc.property(anyAddress, spellingArb, (groups, s) => {
        const plain = groups.map((g) => g.toString(16)).join(':');
        const { literal, atCreation, atConnect } = verdicts(groups, s);
        const expected = policy.addressRefusal('models.example.com', plain, 8443);
        expect(atCreation, literal).toBe(expected);
        expect(atConnect, literal).toBe(expected);
        expect(canonicalAddress(spell(groups, s, true))).toBe(canonicalAddress(plain));
      }),
      settings,
    );
  });

  it('lets public addresses through in every form: global IPv6, and a public IPv4 mapped, NAT64 or 6to4', () => {
    const publicV4 = fc.constantFrom('93.184.216.34', '8.8.8.8', '1.1.1.1', '151.101.1.69');
    const globalV6 = inBlock([[0x2600, 0, 0, 0, 0, 0, 0, 0], 12]);
    fc.assert(
      fc.property(globalV6, spellingArb, (groups, s) => {
        const { literal, atCreation, atConnect } = verdicts(groups, s);
        expect(atCreation, literal).toBeNull();
        expect(atConnect, literal).toBeNull();
      }),
      settings,
    );
    fc.assert(
      fc.property(
        publicV4,
        fc.constantFrom('IPv4-mapped ::ffff:a.b.c.d', 'NAT64 64:ff9b::/96', '6to4 2002::/16'),
        spellingArb,
        (v4, form, s) => {
          const [high, low] = v4Groups(v4);
          const { literal, atCreation } = verdicts(EMBEDDINGS[form]!(high, low, 0), s);
          expect(atCreation, literal).toBeNull();
        },
      ),
      settings,
    );
  });
});
