// The OpenAPI document is built from the same zod schemas the routes validate with, so the
// document can never drift from what the server accepts.
import type { RouteOptions } from 'fastify';
import { z } from 'zod';

export interface RouteDoc {
  summary: string;
  tag: string;
  /** Public routes skip bearer auth. */
  public?: boolean;
}

interface RouteSchema {
  body?: z.ZodType;
  params?: z.ZodType;
  querystring?: z.ZodType;
  response?: Record<number, z.ZodType>;
}

export class OpenApiRegistry {
  private readonly routes: { method: string; url: string; doc: RouteDoc; schema: RouteSchema; idempotent: boolean }[] =
    [];

  /** fastify onRoute hook: remembers every documented route. */
  readonly collect = (route: RouteOptions): void => {
    const config = route.config as { doc?: RouteDoc; idempotent?: boolean } | undefined;
    const doc = config?.doc;
    if (!doc) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method === 'HEAD') continue;
      this.routes.push({
        method: method.toLowerCase(),
        url: route.url,
        doc,
        schema: (route.schema ?? {}) as RouteSchema,
        idempotent: config?.idempotent === true,
      });
    }
  };

  document(serverUrl: string): Record<string, unknown> {
    const paths: Record<string, Record<string, unknown>> = {};
    const json = (schema: z.ZodType, io: 'input' | 'output') =>
      z.toJSONSchema(schema, { target: 'openapi-3.0', io, unrepresentable: 'any' });
    for (const { method, url, doc, schema, idempotent } of this.routes) {
      const path = url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
      const parameters: unknown[] = [];
      for (const [where, s] of [
        ['path', schema.params],
        ['query', schema.querystring],
      ] as const) {
        if (!s) continue;
        const js = json(s, 'input') as { properties?: Record<string, unknown>; required?: string[] };
        for (const [name, prop] of Object.entries(js.properties ?? {})) {
          parameters.push({
            name,
            in: where,
            required: where === 'path' || (js.required ?? []).includes(name),
            schema: prop,
          });
        }
      }
      if (idempotent) {
        parameters.push({
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'The same key within 24 hours returns the first answer (Idempotent-Replayed: true) and creates nothing.',
          schema: { type: 'string', minLength: 1, maxLength: 255 },
        });
      }
      const responses: Record<string, unknown> = {};
      for (const [status, s] of Object.entries(schema.response ?? {})) {
        responses[status] = {
          description: Number(status) < 400 ? 'success' : 'error',
          content: { 'application/json': { schema: json(s, 'output') } },
        };
      }
      if (idempotent)
        responses['409'] ??= {
          description: 'Idempotency-Key reused with another request, or its first request still running',
        };
      if (!doc.public) responses['401'] = { description: 'missing or wrong bearer token' };
      paths[path] ??= {};
      paths[path][method] = {
        summary: doc.summary,
        tags: [doc.tag],
        ...(doc.public ? { security: [] } : {}),
        ...(parameters.length ? { parameters } : {}),
        ...(schema.body
          ? { requestBody: { required: true, content: { 'application/json': { schema: json(schema.body, 'input') } } } }
          : {}),
        responses,
      };
    }
    return {
      openapi: '3.0.3',
      info: {
        title: 'Voice-agent call runtime API',
        version: '1.0.0',
        description: 'Calls, agents, campaigns and batch calls.',
      },
      servers: [{ url: serverUrl }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
      paths,
    };
  }
}
