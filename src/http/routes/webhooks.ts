// Webhook settings of the caller's organization, and its deliveries: listed with their attempts
// and last answer, and sent again on request.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Clock } from '../../clock.ts';
import { refuseUrlFields, urlFieldsOf } from '../../schema-fields.ts';
import { notFound } from '../../errors.ts';
import { WEBHOOK_EVENTS } from '../../webhooks/events.ts';
import { DELIVERY_STATUSES, type WebhookRepository, type WebhookSettings } from '../../webhooks/repository.ts';
import { ErrorBodySchema } from '../schemas.ts';

/** How long a rotated-out secret keeps signing beside the new one. */
export const PREVIOUS_SECRET_VALID_MS = 24 * 3_600_000;

const Settings = z.object({
  webhook_url: z.string().nullable(),
  events: z.array(z.enum(WEBHOOK_EVENTS)),
  signing_secret: z.string(),
  previous_secret_valid_until: z
    .number()
    .nullable()
    .describe('epoch ms until which the previous secret signs too (a second d= in x-signature)'),
});
const PutSettings = z.strictObject({
  webhook_url: z
    .url({ protocol: /^https?$/ })
    .nullable()
    .optional(),
  events: z.array(z.enum(WEBHOOK_EVENTS)).max(WEBHOOK_EVENTS.length).optional(),
});
const SETTINGS_URL_FIELDS = urlFieldsOf(PutSettings);
const DeliverySchema = z.object({
  delivery_id: z.string(),
  event: z.enum(WEBHOOK_EVENTS),
  call_id: z.string().nullable(),
  url: z.string(),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.int(),
  last_status: z.int().nullable(),
  last_error: z.string().nullable(),
  created_at: z.number(),
  next_attempt_at: z.number().nullable(),
  delivered_at: z.number().nullable(),
});
const ListDeliveries = z.strictObject({
  filter_criteria: z
    .strictObject({
      status: z.array(z.enum(DELIVERY_STATUSES)).max(3).optional(),
      event: z.array(z.enum(WEBHOOK_EVENTS)).max(WEBHOOK_EVENTS.length).optional(),
      call_id: z.array(z.string().max(200)).max(100).optional(),
    })
    .optional(),
  limit: z.int().min(1).max(500).default(50),
  pagination_key: z.string().max(500).nullable().optional(),
});
const DeliveryIdParams = z.strictObject({ delivery_id: z.string().min(1).max(200) });

const shown = (s: WebhookSettings): z.infer<typeof Settings> => ({
  webhook_url: s.webhook_url,
  events: s.events,
  signing_secret: s.signing_secret,
  previous_secret_valid_until: s.previous_valid_until,
});

export function webhookRoutes(
  app: FastifyInstance,
  deps: { repo: WebhookRepository; clock: Clock; refusal: (url: string) => string | null },
): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const errors = { 400: ErrorBodySchema, 404: ErrorBodySchema };

  r.get('/v2/webhook-settings', {
    config: { doc: { summary: "The organization's webhook URL, events and signing secret", tag: 'webhooks' } },
    schema: { response: { 200: Settings } },
    handler: async (request) => shown(await deps.repo.settings(request.orgId)),
  });

  r.put('/v2/webhook-settings', {
    config: {
      doc: {
        summary: "Set the organization's default webhook URL (an agent's webhook_url wins) and the events it takes",
        tag: 'webhooks',
      },
    },
    schema: { body: PutSettings, response: { 200: Settings, 400: ErrorBodySchema } },
    handler: async (request) => {
      refuseUrlFields(SETTINGS_URL_FIELDS, request.body, deps.refusal);
      return shown(
        await deps.repo.updateSettings(request.orgId, {
          webhook_url: request.body.webhook_url,
          events: request.body.events,
        }),
      );
    },
  });

  r.post('/v2/webhook-settings/rotate-secret', {
    config: { doc: { summary: 'A new signing secret; the old one signs beside it for 24 h', tag: 'webhooks' } },
    schema: { response: { 200: Settings } },
    handler: async (request) =>
      shown(await deps.repo.rotateSecret(request.orgId, deps.clock.now() + PREVIOUS_SECRET_VALID_MS)),
  });

  r.post('/v2/webhook-deliveries/list', {
    config: {
      doc: {
        summary: 'List webhook deliveries, newest first (filters status, event, call_id; keyset paging)',
        tag: 'webhooks',
      },
    },
    schema: {
      body: ListDeliveries,
      response: {
        200: z.object({ deliveries: z.array(DeliverySchema), next_cursor: z.string().nullable() }),
        400: ErrorBodySchema,
      },
    },
    handler: async (request) => {
      const { filter_criteria: filter, limit, pagination_key: paginationKey } = request.body;
      const page = await deps.repo.list(request.orgId, {
        status: filter?.status,
        event: filter?.event,
        call_id: filter?.call_id,
        limit,
        paginationKey,
      });
      return { deliveries: page.deliveries, next_cursor: page.nextCursor };
    },
  });

  r.post('/v2/webhook-deliveries/:delivery_id/redeliver', {
    config: { doc: { summary: 'Send a delivery again now (whatever its state)', tag: 'webhooks' } },
    schema: { params: DeliveryIdParams, response: { 200: DeliverySchema, ...errors } },
    handler: async (request) => {
      const delivery = await deps.repo.redeliver(request.orgId, request.params.delivery_id, deps.clock.now());
      if (!delivery) throw notFound('delivery', request.params.delivery_id);
      return delivery;
    },
  });
}
