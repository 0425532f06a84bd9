// GET /metrics for Prometheus: outside the organizations' API keys (it spans every organization),
// open only with METRICS=public or to a bearer of METRICS_TOKEN.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.ts';
import { ApiError } from '../../errors.ts';
import type { ServiceMetrics } from '../../metrics/metrics.ts';

const digest = (value: string) => createHash('sha256').update(value).digest();

export function metricsRoute(
  app: FastifyInstance,
  metrics: ServiceMetrics,
  access: NonNullable<Config['metrics']>,
): void {
  const expected = access.access === 'token' ? digest(`Bearer ${access.token}`) : undefined;
  app.get(
    '/metrics',
    {
      config: {
        doc: { summary: 'Prometheus metrics (METRICS=public, or Bearer METRICS_TOKEN)', tag: 'system', public: true },
      },
    },
    async (request, reply) => {
      // Compared as digests: equal length, so the comparison takes the same time whatever was sent.
      if (expected && !timingSafeEqual(digest(request.headers.authorization ?? ''), expected)) {
        throw new ApiError('UNAUTHORIZED', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>', {
          headers: { 'WWW-Authenticate': 'Bearer' },
        });
      }
      return reply.type(metrics.contentType).send(await metrics.render());
    },
  );
}
