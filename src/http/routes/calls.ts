import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AudioError } from '../../audio/errors.ts';
import { oggOpusRecording } from '../../audio/opus/index.ts';
import { openRecording } from '../../call/recorder.ts';
import { ApiError } from '../../errors.ts';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { parseVersionSpec } from '../../agents/service.ts';
import { CallRecordSchema, toV1Record } from '../../records/record.ts';
import type { CallService } from '../../records/service.ts';
import type { CallControl } from '../../call/control.ts';
import type { CallFilter } from '../../records/repository.ts';
import {
  CallIdParams,
  ContextBody,
  ControlAck,
  CreateCallAck,
  CreateCallBody,
  ErrorBodySchema,
  ListCallsV1Body,
  ListCallsV1Response,
  ListCallsV2Body,
  ListCallsV2Response,
  PatchCallBody,
  SayBody,
  V2FilterCriteria,
} from '../schemas.ts';
import { z } from 'zod';

/** v1 calls `duration` what v2 also calls `duration_ms`; both mean milliseconds. */
function toFilter(criteria: z.infer<typeof V2FilterCriteria> | undefined): CallFilter {
  if (!criteria) return {};
  const { duration, duration_ms, ...rest } = criteria;
  const range = duration_ms ?? duration;
  if (duration && duration_ms) {
    return {
      ...rest,
      duration_ms: {
        lower_threshold: maxDefined(duration.lower_threshold, duration_ms.lower_threshold),
        upper_threshold: minDefined(duration.upper_threshold, duration_ms.upper_threshold),
      },
    };
  }
  return range ? { ...rest, duration_ms: range } : rest;
}

const maxDefined = (a?: number, b?: number) => (a === undefined ? b : b === undefined ? a : Math.max(a, b));
const minDefined = (a?: number, b?: number) => (a === undefined ? b : b === undefined ? a : Math.min(a, b));

const RecordingQuery = z.object({
  format: z
    .enum(['wav', 'ogg'])
    .default('wav')
    .describe('wav: 16 kHz PCM16; ogg: Ogg Opus (32 kbit/s, about a twentieth of the WAV)'),
});

const callInPath = (request: FastifyRequest) => (request.params as { call_id: string }).call_id;

export function callRoutes(
  app: FastifyInstance,
  calls: CallService,
  control: CallControl,
  recordingPath: (callId: string) => string,
): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const errors = { 400: ErrorBodySchema, 404: ErrorBodySchema };
  // Both list versions take the same query; they differ only in how the page is shaped.
  const listPage = (orgId: string, body: z.infer<typeof ListCallsV2Body> | z.infer<typeof ListCallsV1Body>) =>
    calls.list(orgId, {
      filter: toFilter(body.filter_criteria),
      order: body.sort_order,
      limit: body.limit,
      paginationKey: body.pagination_key,
    });

  r.post('/v2/calls', {
    config: { doc: { summary: 'Create an outbound call', tag: 'calls' }, idempotent: true },
    schema: { body: CreateCallBody, response: { 201: CreateCallAck, ...errors } },
    handler: async (request, reply) => {
      const body = request.body;
      const record = await calls.createOutbound(request.orgId, {
        agentId: body.agent_id,
        agentVersion: parseVersionSpec(body.agent_version),
        from: body.call_from,
        to: body.call_to,
        presentationNumber: body.presentation_number ?? null,
        metadata: body.metadata ?? {},
        dynamicVariables: body.dynamic_variables ?? {},
      });
      return reply.code(201).send({
        call_id: record.call_id,
        status: record.call_status,
        call_from: body.call_from,
        call_to: body.call_to,
        metadata: record.metadata,
        dynamic_variables: record.dynamic_variables,
      });
    },
  });

  r.get('/v2/calls/:call_id', {
    config: { doc: { summary: 'Read a call record', tag: 'calls' } },
    schema: { params: CallIdParams, response: { 200: CallRecordSchema, ...errors } },
    handler: async (request) => calls.get(request.orgId, request.params.call_id),
  });

  r.get('/v2/calls/:call_id/recording', {
    config: {
      doc: {
        summary: 'The call’s two-channel recording (caller left, agent right): 16 kHz WAV, or Ogg Opus with format=ogg',
        tag: 'calls',
      },
    },
    schema: { params: CallIdParams, querystring: RecordingQuery },
    handler: async (request, reply) => {
      const record = await calls.get(request.orgId, request.params.call_id);
      const missing = () => new ApiError('NOT_FOUND', `call ${record.call_id} has no recording`);
      if (!record.recording_url) throw missing();
      const path = recordingPath(record.call_id);
      const notThere = (error: unknown): never => {
        throw (error as NodeJS.ErrnoException).code === 'ENOENT' ? missing() : error;
      };
      if (request.query.format === 'ogg') {
        const ogg = await oggOpusRecording(path).catch((error: unknown) => {
          if (error instanceof AudioError && error.code === 'AUDIO_OPUS_UNAVAILABLE')
            throw new ApiError('CODEC_UNAVAILABLE', `${error.message}; the WAV is still served without format=ogg`);
          return notThere(error);
        });
        return reply.type('audio/ogg; codecs=opus').send(ogg);
      }
      const recording = await openRecording(path).catch(notThere);
      return reply.type('audio/wav').header('content-length', recording.bytes).send(recording.stream);
    },
  });

  r.post('/v2/calls/list', {
    config: { doc: { summary: 'List call records (keyset paging, total_count)', tag: 'calls' } },
    schema: { body: ListCallsV2Body, response: { 200: ListCallsV2Response, 400: ErrorBodySchema } },
    handler: async (request) => {
      const page = await listPage(request.orgId, request.body);
      return { calls: page.calls, next_cursor: page.nextCursor, total_count: page.totalCount };
    },
  });

  r.post('/v1/list-calls', {
    config: { doc: { summary: 'List call records (first version)', tag: 'calls' } },
    schema: { body: ListCallsV1Body, response: { 200: ListCallsV1Response, 400: ErrorBodySchema } },
    handler: async (request) => {
      const page = await listPage(request.orgId, request.body);
      return {
        calls: page.calls.map(toV1Record),
        ...(page.nextCursor ? { next_pagination_key: page.nextCursor } : {}),
      };
    },
  });

  // Live control: the call's organization only (another's id is 404), 409 when it is not under way;
  // passed on to the node running the call when it is another (callOf, forward.ts).
  const controlErrors = { 400: ErrorBodySchema, 404: ErrorBodySchema, 409: ErrorBodySchema };
  r.post('/v2/calls/:call_id/end', {
    config: { doc: { summary: 'End an ongoing call now (agent_hangup)', tag: 'live calls' }, callOf: callInPath },
    schema: { params: CallIdParams, response: { 202: ControlAck, ...controlErrors } },
    handler: async (request, reply) => {
      await control.end(request.orgId, request.params.call_id);
      return reply.code(202).send({ call_id: request.params.call_id, accepted: 'end' });
    },
  });

  r.post('/v2/calls/:call_id/say', {
    config: {
      doc: {
        summary: 'Speak a line in an ongoing call (after what is being said, or at once with interrupt)',
        tag: 'live calls',
      },
      callOf: callInPath,
    },
    schema: { params: CallIdParams, body: SayBody, response: { 202: ControlAck, ...controlErrors } },
    handler: async (request, reply) => {
      await control.say(request.orgId, request.params.call_id, request.body.text, request.body.interrupt);
      return reply.code(202).send({ call_id: request.params.call_id, accepted: 'say' });
    },
  });

  r.post('/v2/calls/:call_id/context', {
    config: { doc: { summary: 'Add a note the model sees from its next turn', tag: 'live calls' }, callOf: callInPath },
    schema: { params: CallIdParams, body: ContextBody, response: { 202: ControlAck, ...controlErrors } },
    handler: async (request, reply) => {
      await control.addContext(request.orgId, request.params.call_id, request.body.content);
      return reply.code(202).send({ call_id: request.params.call_id, accepted: 'context' });
    },
  });

  r.patch('/v2/calls/:call_id', {
    config: { doc: { summary: "Replace a call record's metadata", tag: 'calls' } },
    schema: { params: CallIdParams, body: PatchCallBody, response: { 200: CallRecordSchema, ...errors } },
    handler: async (request) => control.setMetadata(request.orgId, request.params.call_id, request.body.metadata),
  });

  r.delete('/v2/calls/:call_id', {
    config: {
      doc: { summary: 'Delete a call record, its transcript and recording (409 until the call is over)', tag: 'calls' },
    },
    schema: {
      params: CallIdParams,
      response: { 204: z.null().describe('deleted'), 404: ErrorBodySchema, 409: ErrorBodySchema },
    },
    handler: async (request, reply) => {
      await control.delete(request.orgId, request.params.call_id);
      return reply.code(204).send(null);
    },
  });
}
