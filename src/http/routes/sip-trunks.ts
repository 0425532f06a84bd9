// The organization's SIP trunks (docs/carriers/sip.md): the passwords go in and never come out.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  CreateSipTrunkBody,
  ListSipTrunksBody,
  ListSipTrunksResponse,
  PatchSipTrunkBody,
  SipTrunkIdParams,
  SipTrunkResponse,
  sipTrunkView,
} from '../../sip-trunks/schema.ts';
import type { SipTrunkService } from '../../sip-trunks/service.ts';
import { ErrorBodySchema } from '../schemas.ts';

export function sipTrunkRoutes(app: FastifyInstance, trunks: SipTrunkService): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const errors = { 400: ErrorBodySchema, 404: ErrorBodySchema };
  const doc = (summary: string) => ({ doc: { summary, tag: 'SIP trunks' } });

  r.post('/v2/sip-trunks', {
    config: doc(
      'Connect a phone system or carrier over SIP: the numbers it sends and who may send them (source addresses, or a username and password); passwords are write-only',
    ),
    schema: {
      body: CreateSipTrunkBody,
      response: { 201: SipTrunkResponse, 400: ErrorBodySchema, 409: ErrorBodySchema },
    },
    handler: async (request, reply) =>
      reply.code(201).send(sipTrunkView(await trunks.create(request.orgId, request.body))),
  });

  r.get('/v2/sip-trunks/:sip_trunk_id', {
    config: doc('Read a SIP trunk (never its passwords)'),
    schema: { params: SipTrunkIdParams, response: { 200: SipTrunkResponse, ...errors } },
    handler: async (request) => sipTrunkView(await trunks.get(request.orgId, request.params.sip_trunk_id)),
  });

  r.patch('/v2/sip-trunks/:sip_trunk_id', {
    config: doc('Change a SIP trunk: its name, numbers, inbound or outbound side (each whole, passwords included)'),
    schema: {
      params: SipTrunkIdParams,
      body: PatchSipTrunkBody,
      response: { 200: SipTrunkResponse, ...errors, 409: ErrorBodySchema },
    },
    handler: async (request) =>
      sipTrunkView(await trunks.patch(request.orgId, request.params.sip_trunk_id, request.body)),
  });

  r.delete('/v2/sip-trunks/:sip_trunk_id', {
    config: doc('Delete a SIP trunk; its numbers are let go (but those an agent or carrier account holds)'),
    schema: { params: SipTrunkIdParams, response: { 204: z.null(), ...errors } },
    handler: async (request, reply) => {
      await trunks.delete(request.orgId, request.params.sip_trunk_id);
      return reply.code(204).send(null);
    },
  });

  r.post('/v2/sip-trunks/list', {
    config: doc("List the organization's SIP trunks, newest first (filter name; keyset paging)"),
    schema: { body: ListSipTrunksBody, response: { 200: ListSipTrunksResponse, 400: ErrorBodySchema } },
    handler: async (request) => {
      const page = await trunks.list(request.orgId, request.body);
      return { sip_trunks: page.trunks.map(sipTrunkView), next_cursor: page.nextCursor, total_count: page.totalCount };
    },
  });
}
