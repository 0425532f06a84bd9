// Plivo's answer URLs. /telephony/plivo/voice is the application's answer URL for inbound calls
// (POST, or GET when the application says so): the number called (To) must be on an
// organization's Plivo account, whose Auth Token checks the signature (403 and no record
// otherwise); an agent of that organization takes the call as every carrier's are
// (carriers/inbound-call.ts), recorded with the account, and answered with a <Stream> (xml.ts).
// /telephony/plivo/answer is the answer_url of each call the service places (dialer.ts): its
// address names the call and its stream secret, Plivo signs it with the account's token, and its
// CallUUID is recorded (hang-up and transfer use it) before the stream is asked for. A warm
// transfer's second leg (leg=consult in the address) is no call of its own: its CallUUID is kept,
// by its RequestUUID, for the bridge (consult-legs.ts), and the call's stays as it was.
//
// The parameters relied on, as Plivo documents its answer URL request: CallUUID, From, To (digits
// with the country code, no "+"), Direction (inbound | outbound), CallStatus; besides them, on a
// call placed through the API, ALegRequestUUID (the create's request_uuid; RequestUUID as well).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ApiError } from '../../errors.ts';
import type { CarrierCallRepository } from '../carrier-calls.ts';
import { type InboundCallDeps, takeInboundCall } from '../inbound-call.ts';
import { e164, type PlivoAccounts } from './accounts.ts';
import type { PlivoConsultLegs } from './consult-legs.ts';
import { addPlivoFormParser, plivoParam, plivoParams, requestUuidOf, verifyPlivoRequest } from './webhook.ts';
import { connectStreamXml, sayAndHangUpXml } from './xml.ts';

/** Not a valid organization id, so carrier answers never share keys with an organization's. */
const CARRIER_NAMESPACE = '~plivo';

export const PLIVO_VOICE_PATH = '/telephony/plivo/voice';
export const PLIVO_ANSWER_PATH = '/telephony/plivo/answer';

const AnswerRequest = z.looseObject({
  CallUUID: z.string().min(1).max(200),
  From: z.string().default(''),
  To: z.string().min(1),
});
const AnswerQuery = z.looseObject({
  call_id: z.string().min(1).max(200),
  secret: z.string().min(1).max(500),
  leg: z.literal('consult').optional(),
});

export interface PlivoVoiceDeps extends InboundCallDeps {
  accounts: PlivoAccounts;
  carrierCalls: CarrierCallRepository;
  consultLegs: PlivoConsultLegs;
}

export function plivoVoiceRoutes(app: FastifyInstance, deps: PlivoVoiceDeps): void {
  const inbound = async (request: FastifyRequest, reply: FastifyReply) => {
    // The token is the called number's account's: what the request is about, not who it says it is from.
    const held = await deps.accounts.forCalled(plivoParam(request, 'To') ?? '');
    verifyPlivoRequest(request, held?.keys.authToken, deps.publicUrl());
    const form = AnswerRequest.safeParse(plivoParams(request));
    reply.type('text/xml');
    if (!form.success || !held) return reply.code(400).send(sayAndHangUpXml('This call could not be handled.'));
    return takeInboundCall(
      deps,
      { sayAndHangUp: sayAndHangUpXml, connectStream: connectStreamXml },
      {
        carrier: 'plivo',
        namespace: CARRIER_NAMESPACE,
        carrierCallId: form.data.CallUUID,
        from: e164(form.data.From),
        to: e164(form.data.To),
        metadata: { plivo_call_uuid: form.data.CallUUID },
        carrierAccountId: held.keys.carrierAccountId,
        orgId: held.orgId,
      },
      reply,
      request.log,
    );
  };
  const doc = { summary: 'Plivo answer URL (inbound calls)', tag: 'telephony', public: true };
  void app.register(async (scope) => {
    addPlivoFormParser(scope);
    scope.post(PLIVO_VOICE_PATH, { config: { doc } }, inbound);
    scope.get(PLIVO_VOICE_PATH, { config: { doc: { ...doc, summary: `${doc.summary}, GET` } } }, inbound);

    scope.post(
      PLIVO_ANSWER_PATH,
      {
        config: {
          doc: { summary: 'Plivo answer URL of the calls the service places (signed)', tag: 'telephony', public: true },
          callOf: async (request: FastifyRequest) => AnswerQuery.safeParse(request.query).data?.call_id,
        },
      },
      async (request, reply) => {
        const query = AnswerQuery.safeParse(request.query);
        const keys = await deps.accounts.forCall(query.data?.call_id);
        verifyPlivoRequest(request, keys?.authToken, deps.publicUrl());
        const form = AnswerRequest.safeParse(plivoParams(request));
        if (!query.success || !form.success || !keys)
          throw new ApiError('BAD_REQUEST', 'not the answer of a call placed here');
        if (query.data.leg === 'consult') {
          const placed = requestUuidOf(request);
          if (!placed) throw new ApiError('BAD_REQUEST', 'a transfer call answered without its request uuid');
          deps.consultLegs.answered(placed, form.data.CallUUID);
        } else
          await deps.carrierCalls.record(
            query.data.call_id,
            'plivo',
            form.data.CallUUID,
            deps.clock.now(),
            keys.carrierAccountId,
          );
        return reply.type('text/xml').send(connectStreamXml(deps.publicUrl(), query.data.call_id, query.data.secret));
      },
    );
  });
}
