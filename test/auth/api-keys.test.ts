import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApiKeyAuthenticator, loadOrCreateDefaultKey } from '../../src/auth/api-keys.ts';
import { ApiError } from '../../src/errors.ts';

describe('API key authentication', () => {
  const auth = new ApiKeyAuthenticator([
    { orgId: 'acme', key: 'acme-key-0123456789-0123456789-0123' },
    { orgId: 'globex', key: 'globex-key-0123456789-0123456789-0123' },
  ]);

  it('maps a bearer key to its organization, case-insensitive on the scheme', () => {
    expect(auth.authenticate('Bearer acme-key-0123456789-0123456789-0123')).toBe('acme');
    expect(auth.authenticate('bearer globex-key-0123456789-0123456789-0123')).toBe('globex');
  });

  it('refuses missing, malformed, prefix and wrong keys with 401', () => {
    for (const header of [
      undefined,
      '',
      'acme-key-0123456789-0123456789-0123',
      'Bearer',
      'Bearer acme-key-012345678',
      'Bearer acme-key-0123456789-0123456789-0123x',
      'Basic abc',
    ]) {
      try {
        auth.authenticate(header);
        expect.unreachable(String(header));
      } catch (error) {
        expect(error).toBeInstanceOf(ApiError);
        expect((error as ApiError).status).toBe(401);
      }
    }
  });

  it('generates a default key once, stores it 0600 under DATA_DIR, and reuses it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keys-'));
    let n = 0;
    const random = (bytes: number) =>
      String(++n)
        .repeat(bytes * 2)
        .slice(0, bytes * 2);
    const first = loadOrCreateDefaultKey(dir, random);
    expect(first.created).toBe(true);
    expect(first.entry.orgId).toBe('default');
    expect(readFileSync(first.file, 'utf8').trim()).toBe(first.entry.key);
    expect(statSync(first.file).mode & 0o777).toBe(0o600);
    const second = loadOrCreateDefaultKey(dir, random);
    expect(second).toMatchObject({ created: false, entry: first.entry });
  });
});
