import { describe, expect, it } from 'vitest';
import {
  answerDigestChallenge,
  digestResponse,
  DigestServer,
  NONCE_LIFETIME_MS,
  parseDigestParameters,
} from '../../../src/carriers/sip/digest.ts';

// RFC 7616 §3.9.1 (the SHA-256 computation RFC 8760 brings to SIP) and RFC 2617 §3.5.
const RFC7616 = {
  realm: 'http-auth@example.org',
  nonce: '7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v',
  opaque: 'FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS',
  cnonce: 'f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ',
  username: 'Mufasa',
  password: 'Circle of Life',
  method: 'GET',
  uri: '/dir/index.html',
};

const RFC2617 = {
  realm: 'testrealm@host.com',
  nonce: 'dcd98b7102dd2f0e8b11d0f600bfb0c093',
  cnonce: '0a4f113b',
  username: 'Mufasa',
  password: 'Circle Of Life',
  method: 'GET',
  uri: '/dir/index.html',
};

describe('digest response', () => {
  it('matches RFC 7616’s SHA-256 and MD5 examples', () => {
    const common = { ...RFC7616, qop: { nc: '00000001', cnonce: RFC7616.cnonce } };
    expect(digestResponse({ ...common, algorithm: 'SHA-256' })).toBe(
      '753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1',
    );
    expect(digestResponse({ ...common, algorithm: 'MD5' })).toBe('8ca523f5e9506fed4657c9700eebdbec');
  });

  it('matches RFC 2617’s MD5 example', () => {
    expect(digestResponse({ ...RFC2617, algorithm: 'MD5', qop: { nc: '00000001', cnonce: RFC2617.cnonce } })).toBe(
      '6629fae49393a05397450978507c4ef1',
    );
  });
});

describe('digest parameters', () => {
  it('reads quoted values with escapes and commas, tokens, and lower-cases names', () => {
    const p = parseDigestParameters('Digest Realm="a \\"b\\", c", nonce=xyz , qop="auth,auth-int"')!;
    expect(p.get('realm')).toBe('a "b", c');
    expect(p.get('nonce')).toBe('xyz');
    expect(p.get('qop')).toBe('auth,auth-int');
  });

  it('refuses another scheme and text out of the grammar', () => {
    expect(parseDigestParameters('Basic dXNlcjpwYXNz')).toBeUndefined();
    expect(parseDigestParameters('Digest realm="unterminated')).toBeUndefined();
    expect(parseDigestParameters('Digest =x')).toBeUndefined();
  });
});

describe('digest client', () => {
  it('answers RFC 7616’s SHA-256 challenge with its example response, opaque echoed', () => {
    const challenge = `Digest realm="${RFC7616.realm}", qop="auth, auth-int", algorithm=SHA-256, nonce="${RFC7616.nonce}", opaque="${RFC7616.opaque}"`;
    const answer = answerDigestChallenge([challenge], RFC7616, RFC7616, { cnonce: RFC7616.cnonce })!;
    const p = parseDigestParameters(answer)!;
    expect(p.get('response')).toBe('753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1');
    expect(p.get('algorithm')).toBe('SHA-256');
    expect(p.get('nc')).toBe('00000001');
    expect(p.get('qop')).toBe('auth');
    expect(p.get('opaque')).toBe(RFC7616.opaque);
    expect(p.get('uri')).toBe('/dir/index.html');
  });

  it('prefers SHA-256 when both are offered, whatever their order', () => {
    const md5 = `Digest realm="r", nonce="n", algorithm=MD5, qop="auth"`;
    const sha = `Digest realm="r", nonce="n", algorithm=SHA-256, qop="auth"`;
    const answer = answerDigestChallenge([md5, sha], { method: 'INVITE', uri: 'sip:a@b' }, RFC7616, { cnonce: 'c' })!;
    expect(parseDigestParameters(answer)!.get('algorithm')).toBe('SHA-256');
  });

  it('answers a challenge without qop in the RFC 2069 form, and takes an absent algorithm as MD5', () => {
    const answer = answerDigestChallenge(
      ['Digest realm="r", nonce="n"'],
      { method: 'INVITE', uri: 'sip:a@b' },
      RFC7616,
      {
        cnonce: 'c',
      },
    )!;
    const p = parseDigestParameters(answer)!;
    expect(p.get('qop')).toBeUndefined();
    expect(p.get('algorithm')).toBe('MD5');
    expect(p.get('response')).toBe(
      digestResponse({ ...RFC7616, algorithm: 'MD5', realm: 'r', nonce: 'n', method: 'INVITE', uri: 'sip:a@b' }),
    );
  });

  it('gives no answer to an unknown algorithm or an auth-int-only challenge', () => {
    const request = { method: 'INVITE', uri: 'sip:a@b' };
    expect(
      answerDigestChallenge(['Digest realm="r", nonce="n", algorithm=SHA-512-256'], request, RFC7616, { cnonce: 'c' }),
    ).toBe(undefined);
    expect(
      answerDigestChallenge(['Digest realm="r", nonce="n", qop="auth-int"'], request, RFC7616, { cnonce: 'c' }),
    ).toBe(undefined);
  });
});

describe('digest server', () => {
  const invite = { method: 'INVITE', uri: 'sip:+15550001@198.51.100.7' };
  const passwords: Record<string, string> = { trunk1: 's3cret' };
  const passwordOf = (u: string) => passwords[u];
  let counter = 0;
  function server(now: { t: number }) {
    return new DigestServer({
      key: Buffer.alloc(32, 7),
      realm: 'voice.example',
      clock: { now: () => now.t },
      random: (bytes) => (counter++).toString(16).padStart(bytes * 2, '0'),
    });
  }

  it('offers SHA-256 then MD5 on one nonce, qop=auth', () => {
    const challenges = server({ t: 1_700_000_000_000 }).challenge();
    expect(challenges.map((c) => parseDigestParameters(c)!.get('algorithm'))).toEqual(['SHA-256', 'MD5']);
    const nonces = challenges.map((c) => parseDigestParameters(c)!.get('nonce'));
    expect(nonces[0]).toBe(nonces[1]);
    expect(parseDigestParameters(challenges[0]!)!.get('qop')).toBe('auth');
  });

  it('accepts the client’s answer with either algorithm, without storing the nonce', () => {
    const now = { t: 1_700_000_000_000 };
    const s = server(now);
    for (const challenge of s.challenge()) {
      const answer = answerDigestChallenge(
        [challenge],
        invite,
        { username: 'trunk1', password: 's3cret' },
        { cnonce: 'abc' },
      );
      // A second server with the same key checks it: nothing of the challenge was kept.
      expect(server(now).verify(invite, answer, passwordOf)).toEqual({ ok: true, username: 'trunk1' });
    }
  });

  it('refuses a wrong password, an unknown user, another URI, another method and another realm alike', () => {
    const now = { t: 1_700_000_000_000 };
    const s = server(now);
    const challenge = s.challenge()[0]!;
    const answer = (username: string, password: string, request = invite) =>
      answerDigestChallenge([challenge], request, { username, password }, { cnonce: 'abc' });
    const refused = { ok: false, stale: false };
    expect(s.verify(invite, answer('trunk1', 'wrong'), passwordOf)).toEqual(refused);
    expect(s.verify(invite, answer('nobody', 's3cret'), passwordOf)).toEqual(refused);
    expect(
      s.verify(invite, answer('trunk1', 's3cret', { ...invite, uri: 'sip:+15559999@198.51.100.7' }), passwordOf),
    ).toEqual(refused);
    expect(s.verify({ ...invite, method: 'BYE' }, answer('trunk1', 's3cret'), passwordOf)).toEqual(refused);
    const otherRealm = challenge.replace('voice.example', 'elsewhere');
    const forRealm = answerDigestChallenge(
      [otherRealm],
      invite,
      { username: 'trunk1', password: 's3cret' },
      { cnonce: 'a' },
    );
    expect(s.verify(invite, forRealm, passwordOf)).toEqual(refused);
    expect(s.verify(invite, undefined, passwordOf)).toEqual(refused);
  });

  it('refuses a nonce it did not issue, even with a right response for it', () => {
    const s = server({ t: 1_700_000_000_000 });
    const forged = `Digest realm="voice.example", nonce="${'0'.repeat(60)}", algorithm=SHA-256, qop="auth"`;
    const answer = answerDigestChallenge([forged], invite, { username: 'trunk1', password: 's3cret' }, { cnonce: 'a' });
    expect(s.verify(invite, answer, passwordOf)).toEqual({ ok: false, stale: false });
  });

  it('calls a right answer on an old nonce stale, so the client is challenged again', () => {
    const now = { t: 1_700_000_000_000 };
    const s = server(now);
    const answer = answerDigestChallenge(
      s.challenge(),
      invite,
      { username: 'trunk1', password: 's3cret' },
      { cnonce: 'a' },
    );
    now.t += NONCE_LIFETIME_MS;
    expect(s.verify(invite, answer, passwordOf)).toEqual({ ok: true, username: 'trunk1' });
    now.t += 1;
    expect(s.verify(invite, answer, passwordOf)).toEqual({ ok: false, stale: true });
    expect(s.challenge(true)[0]).toMatch(/, stale=true$/);
  });

  it('refuses an answer without qop (RFC 2069 form), since qop=auth was asked', () => {
    const s = server({ t: 1_700_000_000_000 });
    const withoutQop = s.challenge()[0]!.replace(', qop="auth"', '');
    const answer = answerDigestChallenge(
      [withoutQop],
      invite,
      { username: 'trunk1', password: 's3cret' },
      { cnonce: 'a' },
    );
    expect(parseDigestParameters(answer!)!.get('qop')).toBeUndefined();
    expect(s.verify(invite, answer, passwordOf)).toEqual({ ok: false, stale: false });
  });
});
