import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { parseVersionSpec, type AgentService } from '../../agents/service.ts';
import type { CallService } from '../../records/service.ts';
import type { RandomHex } from '../../clock.ts';
import { opusAvailable } from '../../audio/opus/index.ts';
import type { WebCallTokens } from '../../transports/web/tokens.ts';
import { AgentVersionRequest, ErrorBodySchema } from '../schemas.ts';

export const CreateWebCallBody = z.strictObject({
  agent_id: z.string().min(1),
  agent_version: AgentVersionRequest,
  metadata: z.record(z.string(), z.unknown()).optional(),
  dynamic_variables: z.record(z.string(), z.unknown()).optional(),
});

export const CreateWebCallResponse = z.object({
  call_id: z.string(),
  access_token: z.string().describe('single use; expires after 60 s if unused'),
  websocket_url: z.string(),
  codecs: z
    .array(z.enum(['pcm', 'opus']))
    .describe('what the socket takes as `codec` in its start message; pcm always'),
});

export function webCallRoutes(
  app: FastifyInstance,
  deps: { agents: AgentService; calls: CallService; tokens: WebCallTokens; random: RandomHex; publicUrl: () => string },
): void {
  app.withTypeProvider<ZodTypeProvider>().post('/v2/web-calls', {
    config: {
      doc: { summary: 'Start a browser call: a single-use token for /media/web', tag: 'web calls' },
      idempotent: true,
    },
    schema: {
      body: CreateWebCallBody,
      response: { 201: CreateWebCallResponse, 400: ErrorBodySchema, 404: ErrorBodySchema },
    },
    handler: async (request, reply) => {
      const body = request.body;
      const agent = await deps.agents.resolve(request.orgId, body.agent_id, parseVersionSpec(body.agent_version));
      const { record } = await deps.calls.register(request.orgId, agent, {
        call_type: 'web',
        call_from: null,
        call_to: null,
        metadata: body.metadata ?? {},
        dynamic_variables: body.dynamic_variables ?? {},
      });
      const token = `wct_${deps.random(24)}`;
      await deps.tokens.issue(token, request.orgId, record.call_id);
      return reply.code(201).send({
        call_id: record.call_id,
        access_token: token,
        websocket_url: `${deps.publicUrl().replace(/^http/, 'ws')}/media/web`,
        codecs: opusAvailable() ? ['pcm', 'opus'] : ['pcm'],
      });
    },
  });
}
