// The web-call page is served without auth, with the right content types, and nothing outside
// media/web/ can be reached through it.
import { request as httpRequest } from 'node:http';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEB_PAGE_DIR } from '../../src/http/routes/web-page.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
});
afterAll(async () => t.stop());

/** GET with the path sent byte for byte (fetch would normalise "..", and so hide traversal). */
function rawGet(path: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(t.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, path, method: 'GET' }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('web-call page route', () => {
  it('serves the page at / without an API key, as HTML that loads only same-origin files', async () => {
    const res = await t.request('GET', '/', { key: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.text).toContain('<script type="module" src="/web/app.js">');
    expect(res.text).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('serves every asset under /web/ with its content type', async () => {
    const expected: Record<string, string> = {
      'app.js': 'text/javascript; charset=utf-8',
      'capture-worklet.js': 'text/javascript; charset=utf-8',
      'playback-worklet.js': 'text/javascript; charset=utf-8',
      'style.css': 'text/css; charset=utf-8',
      'index.html': 'text/html; charset=utf-8',
    };
    for (const [file, type] of Object.entries(expected)) {
      const res = await t.request('GET', `/web/${file}`, { key: null });
      expect(res.status, file).toBe(200);
      expect(res.headers.get('content-type'), file).toBe(type);
      expect(res.text, file).toBe(readFileSync(join(WEB_PAGE_DIR, file), 'utf8'));
    }
  });

  it('never embeds an API key or fetches from outside in the page files', () => {
    for (const file of readdirSync(WEB_PAGE_DIR)) {
      const text = readFileSync(join(WEB_PAGE_DIR, file), 'utf8');
      expect(text, file).not.toMatch(/vk_[0-9a-f]{8,}/);
      expect(text, file).not.toMatch(/https?:\/\/(?!localhost)[a-z]/i);
    }
  });

  it('refuses directory traversal and unknown files with 404', async () => {
    for (const path of [
      '/web/../package.json',
      '/web/..%2fpackage.json',
      '/web/%2e%2e%2fpackage.json',
      '/web/%2e%2e/%2e%2e/package.json',
      '/web/..%5c..%5cpackage.json',
      '/web/nope.js',
      '/web/.gitignore',
      '/web/',
      '/web/app.js%00.css',
    ]) {
      const res = await rawGet(path);
      expect(res.status, path).toBe(404);
      expect(res.body, path).not.toContain('"name": "voicecall-runtime"');
    }
  });

  it('keeps the API behind the key: the page being public opens nothing else', async () => {
    const res = await t.request('POST', '/v2/agents/list', { key: null, body: {} });
    expect(res.status).toBe(401);
  });
});
