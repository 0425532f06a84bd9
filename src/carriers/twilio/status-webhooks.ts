// POST /telephony/twilio/status: Twilio's call progress callbacks for the calls we placed.
// POST /telephony/twilio/transfer: how a cold transfer's <Dial> went, and when its destination
// answered; a caller whose transfer failed is sent back to the agent on a new media stream.
// Both reach whichever node the carrier calls, and are passed on to the node running the call.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { CallOutcomes } from '../outcomes.ts';
import type { CarrierCallRepository } from '../carrier-calls.ts';
import { connectStreamTwiml, HANG_UP_TWIML } from './twiml.ts';
import type { TwilioAccounts } from './accounts.ts';
import { addFormParser, verifyTwilioRequest } from './form-webhook.ts';

// Twilio adds fields over time; only the ones we act on are checked.
const StatusForm = z.looseObject({
  CallSid: z.string().min(1),
  CallStatus: z.enum([
    'queued',
    'initiated',
    'ringing',
    'in-progress',
    'answered',
    'completed',
    'busy',
    'failed',
    'no-answer',
    'canceled',
  ]),
  AnsweredBy: z.string().optional(),
  SipResponseCode: z.string().optional(),
});
const StatusQuery = z.strictObject({
  call_id: z.string().min(1).max(200).optional(),
  leg: z.literal('consult').optional(),
});

// The <Dial action> request carries DialCallStatus; the <Number> answered callback, CallStatus.
const TransferForm = z.looseObject({
  CallSid: z.string().min(1),
  DialCallStatus: z.string().optional(),
  CallStatus: z.string().optional(),
});
const TransferQuery = z.strictObject({ call_id: z.string().min(1).max(200), leg: z.literal('answered').optional() });
const CONNECTED = new Set(['answered', 'completed', 'in-progress']);

export interface TwilioStatusDeps {
  outcomes: CallOutcomes;
  carrierCalls: CarrierCallRepository;
  /** A callback is checked with the token of the account its call went through. */
  accounts: TwilioAccounts;
  publicUrl: () => string;
  /**
   * The call a request is about, as its route's `callOf` finds it (looked up once per request; the http room's
   * forwarding reads it too).
   */
  callOf: (request: FastifyRequest) => Promise<string | undefined>;
}

export function twilioStatusRoutes(app: FastifyInstance, deps: TwilioStatusDeps): void {
  /**
   * The call whose account's token checks a callback, read before the form is validated (or trusted): the call_id
   * the service put in the callback's address, else the call Twilio's CallSid was recorded for.
   */
  const callToSign = async (request: FastifyRequest): Promise<string | undefined> => {
    const callId = (request.query as Record<string, unknown> | undefined)?.call_id;
    if (typeof callId === 'string') return callId;
    const sid = (request.body as Record<string, unknown> | undefined)?.CallSid;
    return typeof sid === 'string' ? deps.carrierCalls.callIdOf('twilio', sid) : undefined;
  };
  void app.register(async (scope) => {
    addFormParser(scope);
    const r = scope.withTypeProvider<ZodTypeProvider>();
    r.post('/telephony/twilio/status', {
      config: {
        doc: {
          summary: "Twilio's status callback for outbound calls (form-encoded, signed)",
          tag: 'telephony',
          public: true,
        },
        callOf: async (request) => {
          const { query, body } = request as unknown as {
            query: z.infer<typeof StatusQuery>;
            body: z.infer<typeof StatusForm>;
          };
          return query.call_id ?? (await deps.carrierCalls.callIdOf('twilio', body.CallSid));
        },
      },
      // The signature is checked before the form is trusted: preValidation runs ahead of the schema.
      preValidation: async (request) =>
        verifyTwilioRequest(request, await deps.accounts.signingForCall(await callToSign(request)), deps.publicUrl()),
      schema: { body: StatusForm, querystring: StatusQuery },
      handler: async (request, reply) => {
        const form = request.body;
        if (request.query.leg === 'consult' && request.query.call_id) {
          // A warm transfer's second leg: only a dial that never connected matters to the call.
          request.log.info(
            { call_id: request.query.call_id, call_sid: form.CallSid, status: form.CallStatus },
            'twilio status of a transfer leg',
          );
          if (['busy', 'no-answer', 'failed', 'canceled'].includes(form.CallStatus))
            deps.outcomes.consultFailed(request.query.call_id, form.CallStatus);
          return reply.code(204).send();
        }
        const callId = await deps.callOf(request);
        if (callId) {
          request.log.info(
            { call_id: callId, call_sid: form.CallSid, status: form.CallStatus, answered_by: form.AnsweredBy },
            'twilio status',
          );
          const byMachine = form.AnsweredBy?.startsWith('machine_') === true || form.AnsweredBy === 'fax';
          if (form.CallStatus === 'completed') await deps.outcomes.completed(callId, byMachine);
          else if (byMachine) await deps.outcomes.machineAnswered(callId);
          else if (form.CallStatus === 'no-answer') await deps.outcomes.noAnswer(callId);
          else if (form.CallStatus === 'busy' || form.CallStatus === 'failed' || form.CallStatus === 'canceled') {
            await deps.outcomes.failed(
              callId,
              `The carrier reported the call ${form.CallStatus}${form.SipResponseCode ? ` (SIP ${form.SipResponseCode})` : ''}.`,
            );
          }
        }
        return reply.code(204).send();
      },
    });
    r.post('/telephony/twilio/transfer', {
      config: {
        doc: {
          summary:
            "Twilio's callbacks for a cold transfer: the <Dial action> and the destination's answer (form-encoded, signed)",
          tag: 'telephony',
          public: true,
        },
        callOf: (request) => (request.query as z.infer<typeof TransferQuery>).call_id,
      },
      preValidation: async (request) =>
        verifyTwilioRequest(request, await deps.accounts.signingForCall(await callToSign(request)), deps.publicUrl()),
      schema: { body: TransferForm, querystring: TransferQuery },
      handler: async (request, reply) => {
        const { call_id: callId, leg } = request.query;
        const status = (leg === 'answered' ? request.body.CallStatus : request.body.DialCallStatus) ?? '';
        request.log.info({ call_id: callId, leg: leg ?? 'dial', status }, 'twilio transfer');
        if (leg === 'answered') {
          if (CONNECTED.has(status)) deps.outcomes.transferAnswered(callId);
          return reply.code(204).send();
        }
        reply.type('text/xml');
        if (CONNECTED.has(status)) {
          deps.outcomes.transferAnswered(callId);
          // The action comes once the bridged call is over: the caller's call ends with it.
          return HANG_UP_TWIML;
        }
        const secret = deps.outcomes.transferFailed(callId, status);
        return secret ? connectStreamTwiml(deps.publicUrl(), callId, secret) : HANG_UP_TWIML;
      },
    });
  });
}
