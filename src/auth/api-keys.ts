// Bearer API keys. Keys are compared as SHA-256 digests with timingSafeEqual, and every key
// is checked on every request, so neither a key's content nor its position leaks through time.
import { createHash, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { MIN_API_KEY_LENGTH, type ApiKeyEntry } from '../config.ts';
import { ApiError } from '../errors.ts';

const digest = (value: string) => createHash('sha256').update(value).digest();

export class ApiKeyAuthenticator {
  private readonly entries: { orgId: string; digest: Buffer }[];

  constructor(keys: ApiKeyEntry[]) {
    this.entries = keys.map((k) => ({ orgId: k.orgId, digest: digest(k.key) }));
  }

  get organizations(): string[] {
    return [...new Set(this.entries.map((e) => e.orgId))];
  }

  /** The organization of the bearer token in an Authorization header; throws 401 otherwise. */
  authenticate(header: string | undefined): string {
    if (!header) throw unauthorized('send Authorization: Bearer <API key>');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1]) throw unauthorized('the Authorization header must be "Bearer <API key>"');
    const presented = digest(match[1]);
    let orgId: string | undefined;
    for (const entry of this.entries) {
      if (timingSafeEqual(presented, entry.digest)) orgId = entry.orgId;
    }
    if (orgId === undefined) throw unauthorized('the API key is not valid');
    return orgId;
  }
}

function unauthorized(details: string): ApiError {
  return new ApiError('UNAUTHORIZED', details, { headers: { 'WWW-Authenticate': 'Bearer realm="api"' } });
}

/**
 * With API_KEYS unset, one key for org `default` is generated on first start and kept under
 * DATA_DIR; `created` tells the caller to print it (that one time only).
 */
export function loadOrCreateDefaultKey(
  dataDir: string,
  randomHex: (bytes: number) => string,
): { entry: ApiKeyEntry; created: boolean; file: string } {
  const file = join(dataDir, 'api-key');
  if (existsSync(file)) {
    const key = readFileSync(file, 'utf8').trim();
    if (key.length >= MIN_API_KEY_LENGTH) return { entry: { orgId: 'default', key }, created: false, file };
  }
  mkdirSync(dataDir, { recursive: true });
  const key = `vk_${randomHex(24)}`;
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { entry: { orgId: 'default', key }, created: true, file };
}

/**
 * The auth room, built from config: API_KEYS, or the generated default key. `generatedKey` is set
 * only on the start that created it, so main.ts prints it once.
 */
export function createAuthenticator(
  apiKeys: ApiKeyEntry[],
  dataDir: string,
  deps: { random: (bytes: number) => string; logger: Logger },
): { auth: ApiKeyAuthenticator; generatedKey?: { key: string; file: string } } {
  if (apiKeys.length > 0) return { auth: new ApiKeyAuthenticator(apiKeys) };
  const { entry, created, file } = loadOrCreateDefaultKey(dataDir, deps.random);
  if (!created) deps.logger.info({ file }, 'using the API key stored under DATA_DIR (API_KEYS is unset)');
  return { auth: new ApiKeyAuthenticator([entry]), ...(created ? { generatedKey: { key: entry.key, file } } : {}) };
}
