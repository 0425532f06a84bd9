// POST /telephony/twilio/voice: Twilio's voice webhook for inbound calls, taken as every carrier's
// are (carriers/inbound-call.ts) and answered in TwiML. A number on an organization's own Twilio
// account is signed with that account's token (the service-wide one is refused for it), and the
// call records the account, so its hang-up and transfers use it. SignalWire's cXML webhook is the
// same form, signed the same way under its own header, at /telephony/signalwire/voice (flavor.ts).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { type InboundCallDeps, takeInboundCall } from '../inbound-call.ts';
import type { TwilioAccountBook } from './accounts.ts';
import { TWILIO_FLAVOR, voicePath, type TwilioFlavor } from './flavor.ts';
import { addFormParser, verifyTwilioRequest } from './form-webhook.ts';
import { connectStreamTwiml, sayAndHangUpTwiml } from './twiml.ts';

const VoiceWebhook = z.looseObject({
  CallSid: z.string().min(1),
  From: z.string().default(''),
  To: z.string().min(1),
});

export function twilioVoiceRoutes(
  app: FastifyInstance,
  deps: InboundCallDeps & { accounts: TwilioAccountBook },
  flavor: TwilioFlavor = TWILIO_FLAVOR,
): void {
  const { name, label } = flavor;
  void app.register(async (scope) => {
    addFormParser(scope);
    scope.post(
      voicePath(flavor),
      { config: { doc: { summary: `${label} voice webhook (inbound calls)`, tag: 'telephony', public: true } } },
      async (request, reply) => {
        // The key is the called number's account's: what the request is about, not who it says it is from.
        const called = (request.body as Record<string, unknown> | undefined)?.To;
        const { signing, carrierAccountId, orgId } = await deps.accounts.forCalled(
          typeof called === 'string' ? called : '',
        );
        verifyTwilioRequest(request, signing, deps.publicUrl(), flavor);
        const form = VoiceWebhook.safeParse(request.body);
        reply.type('text/xml');
        if (!form.success) {
          return reply.code(400).send(sayAndHangUpTwiml('This call could not be handled.'));
        }
        return takeInboundCall(
          deps,
          {
            sayAndHangUp: sayAndHangUpTwiml,
            connectStream: (publicUrl, callId, secret) => connectStreamTwiml(publicUrl, callId, secret, flavor),
          },
          {
            carrier: name,
            // Not a valid organization id, so carrier answers never share keys with an organization's.
            namespace: `~${name}`,
            carrierCallId: form.data.CallSid,
            from: form.data.From,
            to: form.data.To,
            metadata: { [`${name}_call_sid`]: form.data.CallSid },
            carrierAccountId,
            orgId,
          },
          reply,
          request.log,
        );
      },
    );
  });
}
