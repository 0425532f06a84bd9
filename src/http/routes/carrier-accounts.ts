// The organization's carrier accounts (docs/carriers/accounts.md): the credentials go in and never come out.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  CarrierAccountIdParams,
  CarrierAccountResponse,
  carrierAccountView,
  CreateCarrierAccountBody,
  ListCarrierAccountsBody,
  ListCarrierAccountsResponse,
  PatchCarrierAccountBody,
} from '../../carrier-accounts/schema.ts';
import type { CarrierAccountService } from '../../carrier-accounts/service.ts';
import { ErrorBodySchema } from '../schemas.ts';

export function carrierAccountRoutes(app: FastifyInstance, accounts: CarrierAccountService): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const errors = { 400: ErrorBodySchema, 404: ErrorBodySchema };
  const doc = (summary: string) => ({ doc: { summary, tag: 'carrier accounts' } });

  r.post('/v2/carrier-accounts', {
    config: doc(
      "Connect the organization's own carrier account and its numbers; Twilio credentials are tried first; credentials are write-only",
    ),
    schema: {
      body: CreateCarrierAccountBody,
      response: { 201: CarrierAccountResponse, 400: ErrorBodySchema, 409: ErrorBodySchema, 502: ErrorBodySchema },
    },
    handler: async (request, reply) =>
      reply.code(201).send(carrierAccountView(await accounts.create(request.orgId, request.body))),
  });

  r.get('/v2/carrier-accounts/:carrier_account_id', {
    config: doc('Read a carrier account (never its credentials)'),
    schema: { params: CarrierAccountIdParams, response: { 200: CarrierAccountResponse, ...errors } },
    handler: async (request) =>
      carrierAccountView(await accounts.get(request.orgId, request.params.carrier_account_id)),
  });

  r.patch('/v2/carrier-accounts/:carrier_account_id', {
    config: doc(
      'Change a carrier account: its name, numbers or credentials (whole); the fields given replace the stored ones',
    ),
    schema: {
      params: CarrierAccountIdParams,
      body: PatchCarrierAccountBody,
      response: { 200: CarrierAccountResponse, ...errors, 409: ErrorBodySchema, 502: ErrorBodySchema },
    },
    handler: async (request) =>
      carrierAccountView(await accounts.patch(request.orgId, request.params.carrier_account_id, request.body)),
  });

  r.delete('/v2/carrier-accounts/:carrier_account_id', {
    config: doc(
      'Delete a carrier account no call is going through (409 naming the calls otherwise); its numbers are let go',
    ),
    schema: { params: CarrierAccountIdParams, response: { 204: z.null(), ...errors, 409: ErrorBodySchema } },
    handler: async (request, reply) => {
      await accounts.delete(request.orgId, request.params.carrier_account_id);
      return reply.code(204).send(null);
    },
  });

  r.post('/v2/carrier-accounts/list', {
    config: doc("List the organization's carrier accounts, newest first (filters carrier, name; keyset paging)"),
    schema: { body: ListCarrierAccountsBody, response: { 200: ListCarrierAccountsResponse, 400: ErrorBodySchema } },
    handler: async (request) => {
      const page = await accounts.list(request.orgId, request.body);
      return {
        carrier_accounts: page.accounts.map(carrierAccountView),
        next_cursor: page.nextCursor,
        total_count: page.totalCount,
      };
    },
  });
}
