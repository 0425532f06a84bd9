// POST /telephony/twilio/voice: Twilio's voice webhook for inbound calls. The agent whose
// inbound_numbers holds `To` takes the call: it is registered, and Twilio is told to open a
// media stream for it. An unknown number hears that it is not in service. CallSid is unique: a
// webhook Twilio sends again for the same call gets the first answer, never a second call. A number
// on an organization's own Twilio account is signed with that account's token (the service-wide one
// is refused for it), and the call records the account, so its hang-up and transfers use it.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Clock } from '../../clock.ts';
import type { CallService } from '../../records/service.ts';
import type { AgentRepository } from '../../agents/repository.ts';
import type { CarrierAnswers } from '../carrier.ts';
import type { CarrierCallRepository } from '../carrier-calls.ts';
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

export function twilioVoiceRoutes(
  app: FastifyInstance,
  deps: {
    agents: AgentRepository;
    calls: CallService;
    accounts: TwilioAccounts;
    carrierCalls: CarrierCallRepository;
    publicUrl: () => string;
    answers: CarrierAnswers;
    clock: Clock;
    /** The call registered: the stream must arrive in time or the call ends. */
    onRegistered: (orgId: string, callId: string) => void;
  },
): void {
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
        const agent = await deps.agents.findByInboundNumber(form.data.To);
        if (!agent) {
          request.log.warn({ to: form.data.To }, 'inbound call to a number no agent answers');
          return sayAndHangUpTwiml('The number you have called is not in service. Goodbye.');
        }
        const claim = await deps.answers.claim(CARRIER_NAMESPACE, form.data.CallSid, form.data.To, deps.clock.now());
        if (claim.kind === 'replay') return claim.answer.body;
        if (claim.kind !== 'claimed') {
          request.log.warn(
            { call_sid: form.data.CallSid, claim: claim.kind },
            'voice webhook for a CallSid already answered differently',
          );
          return reply.code(409).send(sayAndHangUpTwiml('This call could not be handled.'));
        }
        try {
          const { record, streamSecret } = await deps.calls.register(agent.orgId, agent, {
            call_type: 'inbound',
            call_from: form.data.From || null,
            call_to: form.data.To,
            metadata: { twilio_call_sid: form.data.CallSid },
          });
          if (carrierAccountId !== undefined)
            await deps.carrierCalls.record(
              record.call_id,
              'twilio',
              form.data.CallSid,
              deps.clock.now(),
              carrierAccountId,
            );
          deps.onRegistered(agent.orgId, record.call_id);
          // Kept with its stream secret: the secret opens this call's stream only while it waits for one.
          const twiml = connectStreamTwiml(deps.publicUrl(), record.call_id, streamSecret);
          await deps.answers.finish(CARRIER_NAMESPACE, form.data.CallSid, { status: 200, body: twiml });
          return twiml;
        } catch (error) {
          await deps.answers.release(CARRIER_NAMESPACE, form.data.CallSid);
          throw error;
        }
      },
    );
  });
}
