// GET or POST /telephony/vonage/voice: the Voice application's answer URL for inbound calls. The
// number called must be on an organization's Vonage account, whose signature secret checks the
// request's token (403 and no record otherwise); an agent of that organization takes the call as
// every carrier's are (carriers/inbound-call.ts), recorded with the account (its hang-up and
// transfers use it), and answered with an NCCO (ncco.ts).
//
// The fields relied on, as Vonage documents the answer webhook (query parameters of a GET, a JSON
// body of a POST): to, from (numbers without "+", or a SIP/app address for from), uuid (the
// call's leg), conversation_uuid; besides region_url and custom_data, which it does not read.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { type InboundCallDeps, takeInboundCall } from '../inbound-call.ts';
import { e164Of, type VonageAccounts } from './accounts.ts';
import { NCCO_MARKUP } from './ncco.ts';
import { addSignedJsonParser, verifyVonageRequest, webhookField } from './webhook.ts';

/** Not a valid organization id, so carrier answers never share keys with an organization's. */
const CARRIER_NAMESPACE = '~vonage';
export const VONAGE_ANSWER_PATH = '/telephony/vonage/voice';

const AnswerWebhook = z.looseObject({
  uuid: z.string().min(1).max(300),
  conversation_uuid: z.string().max(300).optional(),
  from: z.string().max(300).default(''),
  to: z.string().min(1).max(300),
});

export interface VonageVoiceDeps extends InboundCallDeps {
  accounts: VonageAccounts;
}

export function vonageVoiceRoutes(app: FastifyInstance, deps: VonageVoiceDeps): void {
  void app.register(async (scope) => {
    addSignedJsonParser(scope);
    scope.route({
      method: ['GET', 'POST'],
      url: VONAGE_ANSWER_PATH,
      config: { doc: { summary: 'Vonage Voice answer URL (inbound calls), signed', tag: 'telephony', public: true } },
      handler: async (request, reply) => {
        // The secret is the called number's account's: what the request is about, not who it says it is from.
        const held = await deps.accounts.forCalled(e164Of(webhookField(request, 'to') ?? ''));
        await verifyVonageRequest(request, held?.keys, deps.clock.now());
        const answer = AnswerWebhook.safeParse(request.method === 'GET' ? request.query : request.body);
        reply.type('application/json');
        if (!answer.success || !held)
          return reply.code(400).send(NCCO_MARKUP.sayAndHangUp('This call could not be handled.'));
        return takeInboundCall(
          deps,
          NCCO_MARKUP,
          {
            carrier: 'vonage',
            namespace: CARRIER_NAMESPACE,
            carrierCallId: answer.data.uuid,
            from: answer.data.from === '' ? '' : e164Of(answer.data.from),
            to: e164Of(answer.data.to),
            metadata: { vonage_call_uuid: answer.data.uuid },
            carrierAccountId: held.keys.carrierAccountId,
            orgId: held.orgId,
          },
          reply,
          request.log,
        );
      },
    });
  });
}
