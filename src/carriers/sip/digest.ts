// Digest authentication for SIP (RFC 3261 §22, with the RFC 2617 computation and RFC 8760's
// SHA-256): the server side challenges a request (401 WWW-Authenticate from a user agent, 407
// Proxy-Authenticate from a proxy) and checks the answer; the client side answers a challenge
// when the service dials out through a trunk that asks for credentials.
//
// The server keeps nothing per challenge: a nonce is its issue time, a random part and an HMAC
// of both under a key of this process, so any nonce can be checked by recomputing the HMAC and
// reading its age. The cost is that a nonce count (nc) cannot be tracked across requests: a
// captured answer could be replayed while its nonce is fresh, so nonces live a short time
// (NONCE_LIFETIME_MS) and an old one is answered with a new challenge marked stale=true, which
// clients answer again without asking their user. Algorithms are offered strongest first, one
// header field each (RFC 8760 §2.4), and only qop=auth: auth-int would hash bodies for no gain
// here, since SDP is not secret from anyone who can read the SIP.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { RandomHex } from '../../clock.ts';

export type DigestAlgorithm = 'SHA-256' | 'MD5';

/** Strongest first: the order challenges are offered in and the client's preference. */
export const DIGEST_ALGORITHMS: readonly DigestAlgorithm[] = ['SHA-256', 'MD5'];

/** A nonce older than this is stale: the client is challenged again (stale=true). */
export const NONCE_LIFETIME_MS = 60_000;

/** Parameters longer than this are refused unread (a real one is well under 200 characters). */
const MAX_PARAMETER_LENGTH = 1024;

function hash(algorithm: DigestAlgorithm, text: string): string {
  return createHash(algorithm === 'SHA-256' ? 'sha256' : 'md5')
    .update(text, 'utf8')
    .digest('hex');
}

export interface DigestInputs {
  algorithm: DigestAlgorithm;
  username: string;
  realm: string;
  password: string;
  method: string;
  uri: string;
  nonce: string;
  /** Absent for the RFC 2069 form a challenge without qop asks for. */
  qop?: { nc: string; cnonce: string } | undefined;
}

/** The `response` value (RFC 2617 §3.2.2.1; RFC 7616 §3.4.1 for SHA-256, which RFC 8760 adopts). */
export function digestResponse(i: DigestInputs): string {
  const ha1 = hash(i.algorithm, `${i.username}:${i.realm}:${i.password}`);
  const ha2 = hash(i.algorithm, `${i.method}:${i.uri}`);
  return i.qop
    ? hash(i.algorithm, `${ha1}:${i.nonce}:${i.qop.nc}:${i.qop.cnonce}:auth:${ha2}`)
    : hash(i.algorithm, `${ha1}:${i.nonce}:${ha2}`);
}

/**
 * The parameters of a `Digest` credentials or challenge value (`Digest a="b", c=d`); undefined
 * when it is another scheme or does not follow the grammar. Names are lower-cased.
 */
export function parseDigestParameters(value: string): Map<string, string> | undefined {
  const scheme = /^\s*Digest\s+/i.exec(value);
  if (!scheme || value.length > 8 * MAX_PARAMETER_LENGTH) return undefined;
  const parameters = new Map<string, string>();
  const pattern = /\s*([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s",]+))\s*(,|$)/y;
  pattern.lastIndex = scheme[0].length;
  while (pattern.lastIndex < value.length) {
    const match = pattern.exec(value);
    if (!match) return undefined;
    const text = match[2] !== undefined ? match[2].replace(/\\(.)/g, '$1') : match[3]!;
    if (text.length > MAX_PARAMETER_LENGTH) return undefined;
    parameters.set(match[1]!.toLowerCase(), text);
    if (match[4] === '') break;
  }
  return parameters;
}

function quote(text: string): string {
  return `"${text.replace(/["\\]/g, '\\$&')}"`;
}

function algorithmOf(text: string | undefined): DigestAlgorithm | undefined {
  if (text === undefined) return 'MD5'; // RFC 2617 §3.2.1: absent means MD5
  const upper = text.toUpperCase();
  return upper === 'SHA-256' ? 'SHA-256' : upper === 'MD5' ? 'MD5' : undefined;
}

export interface DigestServerOptions {
  /** The HMAC key nonces are signed with (32 random bytes per process is plenty). */
  key: Uint8Array;
  realm: string;
  clock: { now(): number };
  random: RandomHex;
  /** Offered strongest first; both by default. */
  algorithms?: readonly DigestAlgorithm[];
  nonceLifetimeMs?: number;
}

export type DigestVerdict =
  | { ok: true; username: string }
  /** stale: the answer was right but its nonce too old; challenge again with stale=true. */
  | { ok: false; stale: boolean };

export class DigestServer {
  private readonly algorithms: readonly DigestAlgorithm[];
  private readonly lifetime: number;

  constructor(private readonly o: DigestServerOptions) {
    this.algorithms = o.algorithms ?? DIGEST_ALGORITHMS;
    this.lifetime = o.nonceLifetimeMs ?? NONCE_LIFETIME_MS;
  }

  /** The challenge header values, one per algorithm, strongest first, on one fresh nonce. */
  challenge(stale = false): string[] {
    const nonce = this.newNonce();
    return this.algorithms.map(
      (algorithm) =>
        `Digest realm=${quote(this.o.realm)}, nonce=${quote(nonce)}, algorithm=${algorithm}, qop="auth"` +
        (stale ? ', stale=true' : ''),
    );
  }

  /**
   * Checks the `Authorization` (or `Proxy-Authorization`) value of `request`. `passwordOf` gives
   * the password of a username this server knows, or undefined. Every failure looks the same to
   * the caller but for `stale`, which is only set when the answer was otherwise right.
   */
  verify(
    request: { method: string; uri: string },
    credentials: string | undefined,
    passwordOf: (username: string) => string | undefined,
  ): DigestVerdict {
    const refused = { ok: false, stale: false } as const;
    const p = credentials === undefined ? undefined : parseDigestParameters(credentials);
    if (!p) return refused;
    const username = p.get('username');
    const nonce = p.get('nonce');
    const uri = p.get('uri');
    const response = p.get('response');
    const algorithm = algorithmOf(p.get('algorithm'));
    if (!username || !nonce || !uri || !response || !algorithm || !this.algorithms.includes(algorithm)) return refused;
    if (p.get('realm') !== this.o.realm || uri !== request.uri) return refused;
    // Only qop=auth was offered: an answer without it (RFC 2069) or with auth-int is refused.
    const nc = p.get('nc');
    const cnonce = p.get('cnonce');
    if (p.get('qop')?.toLowerCase() !== 'auth' || !nc || !/^[0-9a-fA-F]{8}$/.test(nc) || !cnonce) return refused;
    const age = this.nonceAge(nonce);
    if (age === undefined) return refused;
    const password = passwordOf(username);
    if (password === undefined) return refused;
    const expected = digestResponse({
      algorithm,
      username,
      realm: this.o.realm,
      password,
      method: request.method,
      uri,
      nonce,
      qop: { nc, cnonce },
    });
    const given = Buffer.from(response.toLowerCase(), 'utf8');
    const wanted = Buffer.from(expected, 'utf8');
    if (given.length !== wanted.length || !timingSafeEqual(given, wanted)) return refused;
    if (age > this.lifetime || age < 0) return { ok: false, stale: true };
    return { ok: true, username };
  }

  /** `<issued at, 12 hex><random, 16 hex><HMAC of both and the realm, 32 hex>`. */
  private newNonce(): string {
    const issued = Math.max(0, Math.floor(this.o.clock.now())).toString(16).padStart(12, '0').slice(-12);
    const head = issued + this.o.random(8);
    return head + this.sign(head);
  }

  /** How old the nonce is, or undefined when this server did not issue it. */
  private nonceAge(nonce: string): number | undefined {
    const match = /^([0-9a-f]{12})([0-9a-f]{16})([0-9a-f]{32})$/.exec(nonce);
    if (!match) return undefined;
    const head = match[1]! + match[2]!;
    const mac = Buffer.from(match[3]!, 'hex');
    if (!timingSafeEqual(mac, Buffer.from(this.sign(head), 'hex'))) return undefined;
    return this.o.clock.now() - parseInt(match[1]!, 16);
  }

  private sign(head: string): string {
    return createHmac('sha256', this.o.key).update(`${head}:${this.o.realm}`).digest('hex').slice(0, 32);
  }
}

export interface DigestClientCredentials {
  username: string;
  password: string;
}

/**
 * The `Authorization` value that answers the strongest usable challenge among `challenges` (the
 * WWW-Authenticate or Proxy-Authenticate values of one response) for `method` on `uri`, or
 * undefined when none is usable (another scheme, an unknown algorithm, or a qop other than auth).
 */
export function answerDigestChallenge(
  challenges: readonly string[],
  request: { method: string; uri: string },
  credentials: DigestClientCredentials,
  options: { cnonce: string; nc?: number },
): string | undefined {
  const usable: { algorithm: DigestAlgorithm; p: Map<string, string>; qop: boolean }[] = [];
  for (const value of challenges) {
    const p = parseDigestParameters(value);
    const algorithm = algorithmOf(p?.get('algorithm'));
    if (!p || !algorithm || p.get('realm') === undefined || !p.get('nonce')) continue;
    const qops = p
      .get('qop')
      ?.split(',')
      .map((q) => q.trim().toLowerCase());
    if (qops && !qops.includes('auth')) continue;
    usable.push({ algorithm, p, qop: qops !== undefined });
  }
  usable.sort((a, b) => DIGEST_ALGORITHMS.indexOf(a.algorithm) - DIGEST_ALGORITHMS.indexOf(b.algorithm));
  const chosen = usable[0];
  if (!chosen) return undefined;
  const realm = chosen.p.get('realm')!;
  const nonce = chosen.p.get('nonce')!;
  const nc = (options.nc ?? 1).toString(16).padStart(8, '0');
  const response = digestResponse({
    algorithm: chosen.algorithm,
    username: credentials.username,
    realm,
    password: credentials.password,
    method: request.method,
    uri: request.uri,
    nonce,
    qop: chosen.qop ? { nc, cnonce: options.cnonce } : undefined,
  });
  const parts = [
    `Digest username=${quote(credentials.username)}`,
    `realm=${quote(realm)}`,
    `nonce=${quote(nonce)}`,
    `uri=${quote(request.uri)}`,
    `response=${quote(response)}`,
    `algorithm=${chosen.algorithm}`,
  ];
  if (chosen.qop) parts.push(`qop=auth`, `nc=${nc}`, `cnonce=${quote(options.cnonce)}`);
  const opaque = chosen.p.get('opaque');
  if (opaque !== undefined) parts.push(`opaque=${quote(opaque)}`);
  return parts.join(', ');
}
