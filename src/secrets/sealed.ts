// Secrets at rest: every secret a client gives (model and voice API keys, tool headers, and the
// credentials later rooms keep) is stored sealed with AES-256-GCM under one key, SECRETS_KEY or
// the key generated into DATA_DIR on first start. A sealed value names its key by a short id, so
// a node holding another key says so instead of returning garbage.
import { createCipheriv, createDecipheriv, createHash, randomBytes as cryptoRandomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, parseSecretsKey } from '../config.ts';
import { CodedError } from '../errors.ts';

/** What every sealed value starts with; a stored value without it is plaintext from before sealing. */
export const SEALED_PREFIX = 'sealed:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

/** A stored secret this node cannot open: sealed under another key, or damaged. */
export class SecretKeyError extends CodedError<'SECRET_KEY_MISMATCH'> {
  constructor(message: string) {
    super('SECRET_KEY_MISMATCH', message);
  }
}

export class SecretBox {
  /** The key's id, written into every value it seals: a digest, never the key. */
  readonly keyId: string;

  constructor(
    private readonly key: Buffer,
    private readonly randomBytes: (size: number) => Buffer = cryptoRandomBytes,
  ) {
    if (key.length !== KEY_BYTES) throw new ConfigError(`secrets key: expected ${KEY_BYTES} bytes, got ${key.length}`);
    this.keyId = createHash('sha256').update('voicecall secrets key id\0').update(key).digest('hex').slice(0, 8);
  }

  /** `sealed:v1:<key id>:<base64url of iv, tag and ciphertext>`. */
  seal(plaintext: string): string {
    const iv = this.randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(this.keyId));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${SEALED_PREFIX}${this.keyId}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
  }

  /** The plaintext of a sealed value; a value stored before sealing (no prefix) is returned as it is. */
  open(stored: string): string {
    if (!isSealed(stored)) return stored;
    const [keyId = '', packed = ''] = stored.slice(SEALED_PREFIX.length).split(':');
    if (keyId !== this.keyId) {
      throw new SecretKeyError(
        `a stored secret was sealed with key ${keyId}, but this node's key is ${this.keyId}: give every node the same SECRETS_KEY (docs/configuration.md)`,
      );
    }
    const bytes = Buffer.from(packed, 'base64url');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(this.keyId));
      decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretKeyError(`a stored secret sealed with key ${keyId} is damaged and cannot be opened`);
    }
  }
}

export function isSealed(value: string): boolean {
  return value.startsWith(SEALED_PREFIX);
}

/**
 * The secrets key: SECRETS_KEY when set, else the one kept in DATA_DIR/secrets-key, generated on
 * first start (private to the service's user, like the API key beside it). Several nodes sharing
 * one PostgreSQL database must all be given the same SECRETS_KEY.
 */
export function loadOrCreateSecretsKey(
  configured: Buffer | undefined,
  dataDir: string,
  randomHex: (bytes: number) => string,
): { key: Buffer; file: string | null } {
  if (configured) return { key: configured, file: null };
  const file = join(dataDir, 'secrets-key');
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    // Written whole beside it, then linked into place: a process starting beside this one (another
    // replica on the same volume) reads either no key or the whole key, and the first link wins.
    const draft = `${file}.${process.pid}.tmp`;
    writeFileSync(draft, `${randomHex(KEY_BYTES)}\n`, { mode: 0o600 });
    try {
      linkSync(draft, file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      unlinkSync(draft);
    }
  }
  return { key: parseSecretsKey(readFileSync(file, 'utf8'), file), file };
}
