// The browser web-call page: static files from media/web/, public (the page asks for the API
// key itself and keeps it in sessionStorage). Only files present at start with a known type are
// served, looked up by exact name, so no request path can reach outside the folder.
import type { FastifyInstance } from 'fastify';
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { z } from 'zod';
import { ApiError } from '../../errors.ts';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
};

// Same-origin only: no CDN, no inline script; sockets may go to PUBLIC_URL's ws(s):// address.
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' ws: wss:; media-src 'self' blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  // Small files; always revalidate so a new release is picked up on reload.
  'cache-control': 'no-cache',
  'permissions-policy': 'microphone=(self)',
};

export const WEB_PAGE_DIR = join(import.meta.dirname, '..', '..', '..', 'media', 'web');

/** File name → content type of every servable file in dir (flat: the page has no subfolders). */
export function listWebFiles(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isFile() || entry.name.startsWith('.')) continue;
    const type = CONTENT_TYPES[extname(entry.name).toLowerCase()];
    if (type) files.set(entry.name, type);
  }
  return files;
}

const FileParams = z.object({ file: z.string() });

export function webPageRoutes(app: FastifyInstance, dir: string = WEB_PAGE_DIR): void {
  const files = listWebFiles(dir);
  if (!files.has('index.html')) throw new Error(`web page: ${dir}/index.html is missing`);

  // Read on each request (tiny files) so an edited page shows on reload without a restart.
  const send = (name: string) => ({ type: files.get(name)!, body: readFileSync(join(dir, name)) });

  app.get(
    '/',
    { config: { doc: { summary: 'Browser call page', tag: 'web', public: true } } },
    async (_request, reply) => {
      const file = send('index.html');
      return reply.headers(SECURITY_HEADERS).type(file.type).send(file.body);
    },
  );

  app.get('/web/:file', {
    config: {
      doc: { summary: 'Browser call page assets (scripts, audio worklets, styles)', tag: 'web', public: true },
    },
    schema: { params: FileParams },
    handler: async (request, reply) => {
      const { file } = request.params as z.infer<typeof FileParams>;
      // Exact-name lookup: "..", "%2F" and the like never match an entry.
      if (!files.has(file)) throw new ApiError('NOT_FOUND', `no file ${JSON.stringify(file)} in the web page`);
      const found = send(file);
      return reply.headers(SECURITY_HEADERS).type(found.type).send(found.body);
    },
  });
}
