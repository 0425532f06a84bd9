import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { OpenApiRegistry } from '../openapi.ts';
import { DOCS_PAGE } from '../docs-page.ts';

export function systemRoutes(
  app: FastifyInstance,
  deps: { openapi: OpenApiRegistry; publicUrl: () => string; ready: () => Promise<{ ok: boolean; details: string }> },
): void {
  const Health = z.object({ status: z.string() });
  app.get('/healthz', {
    config: { doc: { summary: 'Liveness: the process serves HTTP', tag: 'system', public: true } },
    schema: { response: { 200: Health } },
    handler: async () => ({ status: 'ok' }),
  });
  app.get('/readyz', {
    config: { doc: { summary: 'Readiness: store reachable and not shutting down', tag: 'system', public: true } },
    schema: {
      response: { 200: Health, 503: Health.or(z.object({ error: z.string(), details: z.string(), code: z.string() })) },
    },
    handler: async (_request, reply) => {
      const state = await deps.ready();
      if (!state.ok) return reply.code(503).send({ error: 'not ready', details: state.details, code: 'NOT_READY' });
      return { status: 'ready' };
    },
  });
  let document: Record<string, unknown> | undefined;
  app.get(
    '/openapi.json',
    { config: { doc: { summary: 'This API as OpenAPI 3', tag: 'system', public: true } } },
    async () => {
      document ??= deps.openapi.document(deps.publicUrl());
      return document;
    },
  );
  app.get(
    '/docs',
    { config: { doc: { summary: 'API reference page', tag: 'system', public: true } } },
    async (_request, reply) => reply.type('text/html; charset=utf-8').send(DOCS_PAGE),
  );
}
