import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseSecretsKey } from '../../src/config.ts';
import { loadOrCreateSecretsKey, SecretBox, SecretKeyError, SEALED_PREFIX } from '../../src/secrets/sealed.ts';

const box = new SecretBox(Buffer.alloc(32, 1));

describe('sealed secrets', () => {
  it('seals with AES-256-GCM so the plaintext is nowhere in the sealed value, and opens it back', () => {
    const sealed = box.seal('sk-live-0123456789');
    expect(sealed.startsWith(`${SEALED_PREFIX}${box.keyId}:`)).toBe(true);
    expect(sealed).not.toContain('sk-live');
    expect(box.open(sealed)).toBe('sk-live-0123456789');
    // A fresh IV each time: equal secrets do not look equal at rest.
    expect(box.seal('sk-live-0123456789')).not.toBe(sealed);
  });

  it('passes a value stored before sealing (no prefix) through as it is', () => {
    expect(box.open('sk-plain-from-before')).toBe('sk-plain-from-before');
  });

  it('refuses to open with another key, naming both key ids, instead of returning garbage', () => {
    const other = new SecretBox(Buffer.alloc(32, 2));
    const sealed = box.seal('sk-live-0123456789');
    expect(() => other.open(sealed)).toThrow(SecretKeyError);
    expect(() => other.open(sealed)).toThrow(
      new RegExp(
        `sealed with key ${box.keyId}, but this node's key is ${other.keyId}: give every node the same SECRETS_KEY`,
      ),
    );
  });

  it('refuses a damaged sealed value', () => {
    const sealed = box.seal('sk-live-0123456789');
    const damaged = sealed.slice(0, -2) + (sealed.endsWith('AA') ? 'BB' : 'AA');
    expect(() => box.open(damaged)).toThrow(/damaged/);
  });
});

describe('the secrets key', () => {
  it('takes 64 hex characters or the base64 of 32 bytes', () => {
    const hex = 'ab'.repeat(32);
    expect(parseSecretsKey(hex)).toEqual(Buffer.from(hex, 'hex'));
    const b64 = Buffer.alloc(32, 9).toString('base64');
    expect(parseSecretsKey(b64)).toEqual(Buffer.alloc(32, 9));
  });

  it('stops the service at start with a clear error for any other SECRETS_KEY', () => {
    for (const bad of ['short', 'ab'.repeat(31), 'zz'.repeat(32), Buffer.alloc(16).toString('base64')]) {
      expect(() => loadConfig({ SECRETS_KEY: bad }), bad).toThrow(ConfigError);
      expect(() => loadConfig({ SECRETS_KEY: bad }), bad).toThrow(
        /SECRETS_KEY: expected 64 hex characters or the base64 of 32 bytes/,
      );
    }
    expect(loadConfig({ SECRETS_KEY: 'cd'.repeat(32) }).secretsKey).toEqual(Buffer.from('cd'.repeat(32), 'hex'));
  });

  it('is generated into DATA_DIR on first start, private, and the same key on every start after', () => {
    const dir = mkdtempSync(join(tmpdir(), 'secrets-key-'));
    let n = 0;
    const random = (bytes: number) => (++n).toString(16).padStart(bytes * 2, '0');
    const first = loadOrCreateSecretsKey(undefined, dir, random);
    expect(first.file).toBe(join(dir, 'secrets-key'));
    expect(statSync(first.file!).mode & 0o777).toBe(0o600);
    expect(loadOrCreateSecretsKey(undefined, dir, random).key).toEqual(first.key);
    expect(readFileSync(first.file!, 'utf8').trim()).toBe(first.key.toString('hex'));
    // SECRETS_KEY wins over the file.
    expect(loadOrCreateSecretsKey(Buffer.alloc(32, 4), dir, random)).toEqual({ key: Buffer.alloc(32, 4), file: null });
  });

  it('names the key file when what it holds is not a key', () => {
    const dir = mkdtempSync(join(tmpdir(), 'secrets-key-'));
    writeFileSync(join(dir, 'secrets-key'), 'not a key\n');
    expect(() => loadOrCreateSecretsKey(undefined, dir, () => '')).toThrow(
      new RegExp(`${join(dir, 'secrets-key')}: expected 64 hex`),
    );
  });
});
