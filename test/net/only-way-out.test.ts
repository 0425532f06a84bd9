// The outbound layer is the only way out: every request the service's configuration makes it send
// goes through src/net/http.ts's guarded dispatcher. Nothing outside src/net/ reaches undici (its
// request, fetch, pools and agents) or node's own HTTP clients, nothing calls the global fetch, and
// sendRequest cannot be called without a dispatcher.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sendRequest } from '../../src/net/http.ts';

const SRC = resolve(import.meta.dirname, '..', '..', 'src');

/** Files outside src/net/ that may, each for its reason. */
const UNDICI_ALLOWED: Record<string, string> = {
  // Forwarding to a peer node: the operator's own processes on internal addresses, which the egress policy exists to
  // refuse.
  'http/forward.ts': 'peer forwarding',
};
const FETCH_ALLOWED: Record<string, string> = {
  // A browser script inside the page's HTML: it runs in the reader's browser, not in the service.
  'http/docs-page.ts': 'browser script',
};
/** Carriers' REST (the carrier's own API, set by the operator) moves onto the outbound layer next. */
const FETCH_ALLOWED_UNDER = ['carriers/'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|mjs|js)$/.test(entry.name) ? [path] : [];
  });
}

const outsideNet = sourceFiles(SRC)
  .map((path) => ({ file: relative(SRC, path).split('\\').join('/'), text: readFileSync(path, 'utf8') }))
  .filter(({ file }) => !file.startsWith('net/'));

describe('the outbound layer is the only way out', () => {
  it('no source file outside net/ imports undici', () => {
    const offenders = outsideNet.filter(
      ({ file, text }) =>
        !(file in UNDICI_ALLOWED) &&
        /\bfrom\s+['"]undici['"]|\bimport\(\s*['"]undici['"]\s*\)|require\(\s*['"]undici['"]\s*\)/.test(text),
    );
    expect(offenders.map(({ file }) => file)).toEqual([]);
  });

  it('no source file outside net/ imports node’s own HTTP clients', () => {
    const client =
      /import\s*\{[^}]*\b(request|get|Agent)\b[^}]*\}\s*from\s*['"]node:https?['"]|import\s+\*\s+as\s+\w+\s+from\s*['"]node:https?['"]/;
    expect(outsideNet.filter(({ text }) => client.test(text)).map(({ file }) => file)).toEqual([]);
  });

  it('no source file outside net/ opens a WebSocket to a provider (only to itself or its peers)', () => {
    // The carriers' and browsers' sockets are the server's own; the simulated phones dial this service's own
    // media route; forwarding reaches peer nodes. A socket to anywhere else opens through net/websocket.ts.
    const opensOwn = new Set(['carriers/sim/twilio-stream.ts', 'http/forward.ts']);
    const offenders = outsideNet.filter(({ file, text }) => !opensOwn.has(file) && /new\s+WebSocket\s*\(/.test(text));
    expect(offenders.map(({ file }) => file)).toEqual([]);
  });

  it('no source file outside net/ calls the global fetch', () => {
    const offenders = outsideNet.filter(
      ({ file, text }) =>
        !(file in FETCH_ALLOWED) &&
        !FETCH_ALLOWED_UNDER.some((dir) => file.startsWith(dir)) &&
        /(?<![.\w])fetch\s*\(/.test(text),
    );
    expect(offenders.map(({ file }) => file)).toEqual([]);
  });

  it('sendRequest without a dispatcher does not typecheck, and is refused if it is called anyway', async () => {
    // @ts-expect-error a request needs one of OutboundHttp's dispatchers: there is no default pool
    const refused = sendRequest('http://127.0.0.1:9/', { method: 'GET' });
    await expect(refused).rejects.toThrow(/needs a dispatcher/);
  });
});
