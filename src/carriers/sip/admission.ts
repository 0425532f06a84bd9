// Which INVITEs are taken (issue 37, "Inbound calls"): one from a trunk whose allowed addresses
// hold its source, or whose username and password the caller proves by digest. The called
// number is the Request-URI's user part and must be one of that trunk's numbers. Everything else
// is refused with the same 403, decided before anything is allocated. When any trunk has a
// username, a caller from an unknown address is challenged first whatever number it calls, so
// neither the challenge nor the refusal tells a prober which numbers exist.
import { BlockList, isIP } from 'node:net';
import type { DigestServer } from './digest.ts';
import { header, type SipRequest } from './message.ts';
import type { SipPeer } from './wire.ts';
import type { InviteAdmission } from './user-agent.ts';

/** The inbound side of a trunk, as admission needs it. */
export interface InboundTrunk<T> {
  /** E.164 numbers with `+`. */
  numbers: readonly string[];
  /** CIDR blocks or single addresses, IPv4 or IPv6. */
  allowedAddresses: readonly string[];
  username?: string | undefined;
  password?: string | undefined;
  /** What the accepted call carries on (the trunk's record). */
  value: T;
}

export interface AdmittedCall<T> {
  trunk: T;
  /** The called number, `+` and digits. */
  calledNumber: string;
}

/**
 * The Request-URI's user part as an E.164 number with `+` (visual separators dropped, URI
 * parameters such as `;npdi` ignored), or undefined when it is not a phone number.
 */
export function calledNumberOf(uri: string): string | undefined {
  const user = /^sips?:([^@]+)@/i.exec(uri.trim())?.[1];
  if (user === undefined) return undefined;
  const digits = decodeURIComponentSafe(user.split(';')[0]!).replace(/[-.()\s]/g, '');
  const match = /^\+?(\d{4,15})$/.exec(digits);
  return match ? `+${match[1]}` : undefined;
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Whether `address` lies in one of `blocks` (CIDR or single addresses; unreadable ones never match). */
export function addressAllowed(address: string, blocks: readonly string[]): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  const list = new BlockList();
  for (const block of blocks) {
    const [net, prefixText] = block.trim().split('/');
    const netFamily = isIP(net ?? '');
    if (netFamily === 0) continue;
    const type = netFamily === 4 ? 'ipv4' : 'ipv6';
    if (prefixText === undefined) list.addAddress(net!, type);
    else {
      const prefix = Number(prefixText);
      if (!Number.isInteger(prefix) || prefix < 0 || prefix > (netFamily === 4 ? 32 : 128)) continue;
      list.addSubnet(net!, prefix, type);
    }
  }
  return list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export class InboundAdmission<T> {
  constructor(
    /** The trunks to admit against (read on each INVITE, so edits apply to the next call). */
    private readonly trunks: () => readonly InboundTrunk<T>[],
    private readonly digest: DigestServer,
  ) {}

  admit(invite: SipRequest, from: SipPeer): InviteAdmission<AdmittedCall<T>> {
    const calledNumber = calledNumberOf(invite.uri);
    const trunks = this.trunks();
    const holders = calledNumber === undefined ? [] : trunks.filter((t) => t.numbers.includes(calledNumber));
    return this.admitAmong({ holders, anyCredentials: trunks.some((t) => t.username) }, invite, from);
  }

  /**
   * The same decision when the caller has looked up the trunks holding the called number itself (a store that
   * finds them by number): `anyCredentials` says whether any trunk at all takes calls by username.
   */
  admitAmong(
    trunks: { holders: readonly InboundTrunk<T>[]; anyCredentials: boolean },
    invite: SipRequest,
    from: SipPeer,
  ): InviteAdmission<AdmittedCall<T>> {
    const refuse = { verdict: 'refuse' } as const;
    const calledNumber = calledNumberOf(invite.uri);
    const holders = calledNumber === undefined ? [] : trunks.holders.filter((t) => t.numbers.includes(calledNumber));
    const byAddress = holders.find((t) => addressAllowed(from.address, t.allowedAddresses));
    if (byAddress && calledNumber) return { verdict: 'accept', value: { trunk: byAddress.value, calledNumber } };
    if (!trunks.anyCredentials) return refuse;
    const credentials = header(invite, 'authorization') ?? header(invite, 'proxy-authorization');
    if (credentials === undefined) return { verdict: 'challenge', status: 401, challenges: this.digest.challenge() };
    let trunk: InboundTrunk<T> | undefined;
    const verdict = this.digest.verify(invite, credentials, (username) => {
      trunk = holders.find((t) => t.username === username && t.password !== undefined);
      return trunk?.password;
    });
    if (verdict.ok && trunk && calledNumber) return { verdict: 'accept', value: { trunk: trunk.value, calledNumber } };
    if (!verdict.ok && verdict.stale)
      return { verdict: 'challenge', status: 401, challenges: this.digest.challenge(true) };
    return refuse;
  }
}
