// POST /telephony/twilio/voice: Twilio's voice webhook for inbound calls, taken as every carrier's
// are (carriers/inbound-call.ts) and answered in TwiML. A number on an organization's own Twilio
// account is signed with that account's token (the service-wide one is refused for it), and the
// call records the account, so its hang-up and transfers use it.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { type InboundCallDeps, takeInboundCall } from '../inbound-call.ts';
import type { TwilioAccounts } from './accounts.ts';
import { addFormParser, verifyTwilioRequest } from './form-webhook.ts';
import { connectStreamTwiml, sayAndHangUpTwiml } from './twiml.ts';

/** Not a valid organization id, so carrier answers never share keys with an organization's. */
const CARRIER_NAMESPACE = '~twilio';

const VoiceWebhook = z.looseObject({
  CallSid: z.string().min(1),
  From: z.string().default(''),
  To: z.string().min(1),
});

export function twilioVoiceRoutes(app: FastifyInstance, deps: InboundCallDeps & { accounts: TwilioAccounts }): void {
  void app.register(async (scope) => {
    addFormParser(scope);
    scope.post(
      '/telephony/twilio/voice',
      { config: { doc: { summary: 'Twilio voice webhook (inbound calls)', tag: 'telephony', public: true } } },
      async (request, reply) => {
        // The key is the called number's account's: what the request is about, not who it says it is from.
        const called = (request.body as Record<string, unknown> | undefined)?.To;
        const { signing, carrierAccountId } = await deps.accounts.forCalled(typeof called === 'string' ? called : '');
        verifyTwilioRequest(request, signing, deps.publicUrl());
        const form = VoiceWebhook.safeParse(request.body);
        reply.type('text/xml');
        if (!form.success) {
          return reply.code(400).send(sayAndHangUpTwiml('This call could not be handled.'));
        }
        return takeInboundCall(
          deps,
          { sayAndHangUp: sayAndHangUpTwiml, connectStream: connectStreamTwiml },
          {
            carrier: 'twilio',
            namespace: CARRIER_NAMESPACE,
            carrierCallId: form.data.CallSid,
            from: form.data.From,
            to: form.data.To,
            metadata: { twilio_call_sid: form.data.CallSid },
            carrierAccountId,
          },
          reply,
          request.log,
        );
      },
    );
  });
}
