import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { agentView, parseVersionSpec, type AgentService } from '../../agents/service.ts';
import type { RandomHex } from '../../clock.ts';
import { newId } from '../../clock.ts';
import {
  AgentIdParams,
  AgentResponse,
  AgentVersionQuery,
  CreateAgentBody,
  ErrorBodySchema,
  ListAgentsBody,
  ListAgentsResponse,
  PatchAgentBody,
} from '../schemas.ts';

export function agentRoutes(app: FastifyInstance, agents: AgentService, random: RandomHex): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const errors = { 400: ErrorBodySchema, 404: ErrorBodySchema };

  r.post('/v2/agents', {
    config: { doc: { summary: 'Create an agent (version 1, published)', tag: 'agents' } },
    schema: { body: CreateAgentBody, response: { 201: AgentResponse, 400: ErrorBodySchema, 409: ErrorBodySchema } },
    handler: async (request, reply) => {
      const { agent_id, ...config } = request.body;
      const created = await agents.create(request.orgId, agent_id ?? newId('agent', random), config);
      return reply.code(201).send(agentView(created));
    },
  });

  r.get('/v2/agents/:agent_id', {
    config: { doc: { summary: 'Read an agent (?version=production|latest|N, default latest)', tag: 'agents' } },
    schema: { params: AgentIdParams, querystring: AgentVersionQuery, response: { 200: AgentResponse, ...errors } },
    handler: async (request) => {
      const spec = request.query.version === undefined ? 'latest' : parseVersionSpec(request.query.version);
      return agentView(await agents.resolve(request.orgId, request.params.agent_id, spec));
    },
  });

  r.patch('/v2/agents/:agent_id', {
    config: { doc: { summary: 'Change an agent: makes the next version, unpublished', tag: 'agents' } },
    schema: { params: AgentIdParams, body: PatchAgentBody, response: { 200: AgentResponse, ...errors } },
    handler: async (request) => agentView(await agents.patch(request.orgId, request.params.agent_id, request.body)),
  });

  r.post('/v2/agents/:agent_id/publish', {
    config: { doc: { summary: 'Make the newest version production', tag: 'agents' } },
    schema: { params: AgentIdParams, response: { 200: AgentResponse, ...errors } },
    handler: async (request) => agentView(await agents.publish(request.orgId, request.params.agent_id)),
  });

  r.post('/v2/agents/list', {
    config: { doc: { summary: 'List agents (newest version of each)', tag: 'agents' } },
    schema: { body: ListAgentsBody, response: { 200: ListAgentsResponse, 400: ErrorBodySchema } },
    handler: async (request) => ({ agents: (await agents.list(request.orgId)).map(agentView) }),
  });
}
