// The organization's provider credentials (docs/providers/credentials.md): the api_key goes in and never comes out.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  CreateCredentialBody,
  CredentialIdParams,
  CredentialResponse,
  credentialView,
  ListCredentialsBody,
  ListCredentialsResponse,
  PatchCredentialBody,
} from '../../credentials/schema.ts';
import type { ProviderCredentialService } from '../../credentials/service.ts';
import { ErrorBodySchema } from '../schemas.ts';

export function providerCredentialRoutes(app: FastifyInstance, credentials: ProviderCredentialService): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const errors = { 400: ErrorBodySchema, 404: ErrorBodySchema };
  const doc = (summary: string) => ({ doc: { summary, tag: 'provider credentials' } });

  r.post('/v2/provider-credentials', {
    config: doc("Keep a provider's API key under a name agents use (stt/voice/llm.credential); the key is write-only"),
    schema: {
      body: CreateCredentialBody,
      response: { 201: CredentialResponse, 400: ErrorBodySchema, 409: ErrorBodySchema },
    },
    handler: async (request, reply) =>
      reply.code(201).send(credentialView(await credentials.create(request.orgId, request.body))),
  });

  r.get('/v2/provider-credentials/:provider_credential_id', {
    config: doc('Read a provider credential (never its key)'),
    schema: { params: CredentialIdParams, response: { 200: CredentialResponse, ...errors } },
    handler: async (request) =>
      credentialView(await credentials.get(request.orgId, request.params.provider_credential_id)),
  });

  r.patch('/v2/provider-credentials/:provider_credential_id', {
    config: doc('Change a credential: a new key (rotation), address or name; the fields given replace the stored ones'),
    schema: {
      params: CredentialIdParams,
      body: PatchCredentialBody,
      response: { 200: CredentialResponse, ...errors, 409: ErrorBodySchema },
    },
    handler: async (request) =>
      credentialView(await credentials.patch(request.orgId, request.params.provider_credential_id, request.body)),
  });

  r.delete('/v2/provider-credentials/:provider_credential_id', {
    config: doc('Delete a provider credential no agent names (409 naming the agents otherwise)'),
    schema: { params: CredentialIdParams, response: { 204: z.null(), ...errors, 409: ErrorBodySchema } },
    handler: async (request, reply) => {
      await credentials.delete(request.orgId, request.params.provider_credential_id);
      return reply.code(204).send(null);
    },
  });

  r.post('/v2/provider-credentials/list', {
    config: doc("List the organization's provider credentials, newest first (filters provider, name; keyset paging)"),
    schema: { body: ListCredentialsBody, response: { 200: ListCredentialsResponse, 400: ErrorBodySchema } },
    handler: async (request) => {
      const page = await credentials.list(request.orgId, request.body);
      return {
        provider_credentials: page.credentials.map(credentialView),
        next_cursor: page.nextCursor,
        total_count: page.totalCount,
      };
    },
  });
}
