import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { parseVersionSpec } from '../../agents/service.ts';
import type { CampaignService } from '../../campaigns/service.ts';
import {
  BatchAck,
  BatchIdParams,
  BatchResponse,
  CampaignIdParams,
  CampaignResponse,
  CreateBatchBody,
  CreateCampaignBody,
  ListCampaignsBody,
  ListCampaignsResponse,
} from '../campaign-schemas.ts';
import { ErrorBodySchema } from '../schemas.ts';

export function campaignRoutes(app: FastifyInstance, campaigns: CampaignService): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const errors = { 400: ErrorBodySchema, 404: ErrorBodySchema };

  r.post('/v2/campaigns', {
    config: { doc: { summary: 'Create a campaign', tag: 'campaigns' }, idempotent: true },
    schema: { body: CreateCampaignBody, response: { 201: CampaignResponse, ...errors } },
    handler: async (request, reply) => {
      const body = request.body;
      const campaign = await campaigns.create(request.orgId, {
        name: body.name,
        agentId: body.agent_id,
        agentVersion: parseVersionSpec(body.agent_version),
        from: body.call_from,
        presentationNumber: body.presentation_number ?? null,
        scheduledAt: body.scheduled_at ? Date.parse(body.scheduled_at) : null,
        concurrency: body.concurrency,
        tasks: body.tasks.map((t) => ({
          callTo: t.call_to,
          presentationNumber: null,
          metadata: t.metadata ?? {},
          dynamicVariables: t.dynamic_variables ?? {},
        })),
      });
      return reply.code(201).send(campaign);
    },
  });

  r.get('/v2/campaigns/:campaign_id', {
    config: { doc: { summary: 'Read a campaign', tag: 'campaigns' } },
    schema: { params: CampaignIdParams, response: { 200: CampaignResponse, ...errors } },
    handler: async (request) => campaigns.get(request.orgId, request.params.campaign_id),
  });

  r.post('/v2/campaigns/list', {
    config: { doc: { summary: 'List campaigns (keyset paging by created_at, total_count)', tag: 'campaigns' } },
    schema: { body: ListCampaignsBody, response: { 200: ListCampaignsResponse, 400: ErrorBodySchema } },
    handler: async (request) => {
      const body = request.body;
      return campaigns.list(request.orgId, {
        filter: body.filter_criteria ?? {},
        order: body.sort_order,
        limit: body.limit,
        paginationKey: body.pagination_key,
      });
    },
  });

  r.post('/v2/campaigns/:campaign_id/cancel', {
    config: { doc: { summary: 'Cancel a campaign: no new calls start, calls under way finish', tag: 'campaigns' } },
    schema: { params: CampaignIdParams, response: { 200: CampaignResponse, ...errors, 409: ErrorBodySchema } },
    handler: async (request) => campaigns.cancel(request.orgId, request.params.campaign_id),
  });

  r.post('/v1/create-outbound-batch-call', {
    config: { doc: { summary: 'Queue a batch of outbound calls', tag: 'batches' }, idempotent: true },
    schema: { body: CreateBatchBody, response: { 201: BatchAck, ...errors } },
    handler: async (request, reply) => {
      const body = request.body;
      const ack = await campaigns.createBatch(request.orgId, {
        name: body.name,
        agentId: body.agent_id,
        agentVersion: parseVersionSpec(body.agent_version),
        from: body.call_from,
        tasks: body.tasks.map((t) => ({
          callTo: t.call_to,
          presentationNumber: t.presentation_number ?? null,
          metadata: t.metadata ?? {},
          dynamicVariables: t.dynamic_variables ?? {},
        })),
      });
      return reply.code(201).send(ack);
    },
  });

  r.get('/v1/batch-calls/:batch_id', {
    config: { doc: { summary: 'Read a batch and its progress', tag: 'batches' } },
    schema: { params: BatchIdParams, response: { 200: BatchResponse, ...errors } },
    handler: async (request) => campaigns.getBatch(request.orgId, request.params.batch_id),
  });
}
