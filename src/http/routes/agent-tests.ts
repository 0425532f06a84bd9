import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { RunDiffSchema } from '../../agent-tests/diff.ts';
import {
  AgentTestInputSchema,
  AgentTestPatchSchema,
  AgentTestSchema,
  TestRunSchema,
} from '../../agent-tests/schema.ts';
import { RunRequestSchema, type AgentTestService } from '../../agent-tests/service.ts';
import { parseVersionSpec } from '../../agents/service.ts';
import { AgentIdParams, ErrorBodySchema } from '../schemas.ts';

const TestIdParams = z.strictObject({ test_id: z.string().min(1).max(200) });
const RunIdParams = z.strictObject({ run_id: z.string().min(1).max(200) });
const ListTestsBody = z.strictObject({}).default({});
const ListRunsBody = z.strictObject({ limit: z.int().min(1).max(100).default(20) }).default({ limit: 20 });
const DiffQuery = z.strictObject({
  against: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe('a run id; by default the last finished run of the previous agent version'),
});

export function agentTestRoutes(app: FastifyInstance, tests: AgentTestService): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const errors = { 400: ErrorBodySchema, 404: ErrorBodySchema };
  const doc = (summary: string) => ({ doc: { summary, tag: 'agent tests' } });

  r.post('/v2/agents/:agent_id/tests', {
    config: doc('Add a test case to an agent: a scripted, simulated or replayed caller and what must happen'),
    schema: { params: AgentIdParams, body: AgentTestInputSchema, response: { 201: AgentTestSchema, ...errors } },
    handler: async (request, reply) =>
      reply.code(201).send(await tests.create(request.orgId, request.params.agent_id, request.body)),
  });

  r.post('/v2/agents/:agent_id/tests/list', {
    config: doc("List an agent's tests, oldest first"),
    schema: {
      params: AgentIdParams,
      body: ListTestsBody,
      response: { 200: z.object({ tests: z.array(AgentTestSchema) }), ...errors },
    },
    handler: async (request) => ({ tests: await tests.list(request.orgId, request.params.agent_id) }),
  });

  r.get('/v2/agent-tests/:test_id', {
    config: doc('Read a test case'),
    schema: { params: TestIdParams, response: { 200: AgentTestSchema, ...errors } },
    handler: async (request) => tests.get(request.orgId, request.params.test_id),
  });

  r.patch('/v2/agent-tests/:test_id', {
    config: doc('Change a test case: the fields given replace the stored ones'),
    schema: { params: TestIdParams, body: AgentTestPatchSchema, response: { 200: AgentTestSchema, ...errors } },
    handler: async (request) => tests.patch(request.orgId, request.params.test_id, request.body),
  });

  r.delete('/v2/agent-tests/:test_id', {
    config: doc('Delete a test case (runs that ran it keep their results)'),
    schema: { params: TestIdParams, response: { 204: z.null(), ...errors } },
    handler: async (request, reply) => {
      await tests.delete(request.orgId, request.params.test_id);
      return reply.code(204).send(null);
    },
  });

  r.post('/v2/agents/:agent_id/test-runs', {
    config: doc(
      "Run an agent's tests on one of its versions: each a real call through the whole pipeline, in the background",
    ),
    schema: {
      params: AgentIdParams,
      body: RunRequestSchema,
      response: { 201: TestRunSchema, ...errors, 409: ErrorBodySchema },
    },
    handler: async (request, reply) => {
      const body = request.body;
      const run = await tests.startRun(request.orgId, request.params.agent_id, {
        agentVersion: parseVersionSpec(body.agent_version),
        testIds: body.test_ids,
        concurrency: body.concurrency,
      });
      return reply.code(201).send(run);
    },
  });

  r.post('/v2/agents/:agent_id/test-runs/list', {
    config: doc("List an agent's test runs, newest first"),
    schema: {
      params: AgentIdParams,
      body: ListRunsBody,
      response: { 200: z.object({ test_runs: z.array(TestRunSchema) }), ...errors },
    },
    handler: async (request) => ({
      test_runs: await tests.listRuns(request.orgId, request.params.agent_id, request.body.limit),
    }),
  });

  r.get('/v2/test-runs/:run_id', {
    config: doc('Read a test run: each test passed or failed, its assertions, transcript, latency and call id'),
    schema: { params: RunIdParams, response: { 200: TestRunSchema, ...errors } },
    handler: async (request) => tests.getRun(request.orgId, request.params.run_id),
  });

  r.get('/v2/test-runs/:run_id/diff', {
    config: doc('What changed against another run (by default the last run of the previous agent version)'),
    schema: { params: RunIdParams, querystring: DiffQuery, response: { 200: RunDiffSchema, ...errors } },
    handler: async (request) => tests.diff(request.orgId, request.params.run_id, request.query.against),
  });
}
