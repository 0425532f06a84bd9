// POST /telephony/telnyx/voice: the TeXML application's voice webhook for inbound calls. The
// number called must be on an organization's Telnyx account, whose public key checks the signature
// (403 and no record otherwise); the agent whose inbound_numbers holds it takes the call: it is
// registered, recorded with the account (its hang-up and transfers use it), and Telnyx is told to
// open a media stream for it. A webhook Telnyx sends again for the same CallSid gets the first answer.
//
// The form fields relied on (TeXML's, as Telnyx documents them): CallSid (the call_control_id),
// From, To (besides AccountSid, CallStatus, Direction, ConnectionId, which it does not read).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Clock } from '../../clock.ts';
import type { AgentRepository } from '../../agents/repository.ts';
import type { CallService } from '../../records/service.ts';
import type { CarrierAnswers } from '../carrier.ts';
import type { CarrierCallRepository } from '../carrier-calls.ts';
import type { TelnyxAccounts } from './accounts.ts';
import { connectStreamTexml, sayAndHangUpTexml } from './texml.ts';
import { addSignedBodyParsers, bodyField, verifyTelnyxRequest } from './webhook.ts';

/** Not a valid organization id, so carrier answers never share keys with an organization's. */
const CARRIER_NAMESPACE = '~telnyx';

const VoiceWebhook = z.looseObject({
  CallSid: z.string().min(1).max(300),
  From: z.string().default(''),
  To: z.string().min(1),
});

export interface TelnyxVoiceDeps {
  agents: AgentRepository;
  calls: CallService;
  accounts: TelnyxAccounts;
  carrierCalls: CarrierCallRepository;
  publicUrl: () => string;
  answers: CarrierAnswers;
  clock: Clock;
  /** The call registered: the stream must arrive in time or the call ends. */
  onRegistered: (orgId: string, callId: string) => void;
}

export function telnyxVoiceRoutes(app: FastifyInstance, deps: TelnyxVoiceDeps): void {
  void app.register(async (scope) => {
    addSignedBodyParsers(scope);
    scope.post(
      '/telephony/telnyx/voice',
      { config: { doc: { summary: 'Telnyx TeXML voice webhook (inbound calls)', tag: 'telephony', public: true } } },
      async (request, reply) => {
        // The key is the called number's account's: what the request is about, not who it says it is from.
        const held = await deps.accounts.forCalled(bodyField(request, 'To') ?? '');
        verifyTelnyxRequest(request, held?.keys.publicKey, deps.clock.now());
        const form = VoiceWebhook.safeParse(request.body);
        reply.type('text/xml');
        if (!form.success || !held) return reply.code(400).send(sayAndHangUpTexml('This call could not be handled.'));
        const agent = await deps.agents.findByInboundNumber(form.data.To);
        if (!agent || agent.orgId !== held.orgId) {
          request.log.warn(
            { to: form.data.To },
            'inbound Telnyx call to a number no agent of its organization answers',
          );
          return sayAndHangUpTexml('The number you have called is not in service. Goodbye.');
        }
        const claim = await deps.answers.claim(CARRIER_NAMESPACE, form.data.CallSid, form.data.To, deps.clock.now());
        if (claim.kind === 'replay') return claim.answer.body;
        if (claim.kind !== 'claimed') {
          request.log.warn(
            { call_sid: form.data.CallSid, claim: claim.kind },
            'voice webhook for a CallSid already answered differently',
          );
          return reply.code(409).send(sayAndHangUpTexml('This call could not be handled.'));
        }
        try {
          const { record, streamSecret } = await deps.calls.register(agent.orgId, agent, {
            call_type: 'inbound',
            call_from: form.data.From || null,
            call_to: form.data.To,
            metadata: { telnyx_call_sid: form.data.CallSid },
          });
          await deps.carrierCalls.record(
            record.call_id,
            'telnyx',
            form.data.CallSid,
            deps.clock.now(),
            held.keys.carrierAccountId,
          );
          deps.onRegistered(agent.orgId, record.call_id);
          // Kept with its stream secret: the secret opens this call's stream only while it waits for one.
          const texml = connectStreamTexml(deps.publicUrl(), record.call_id, streamSecret);
          await deps.answers.finish(CARRIER_NAMESPACE, form.data.CallSid, { status: 200, body: texml });
          return texml;
        } catch (error) {
          await deps.answers.release(CARRIER_NAMESPACE, form.data.CallSid);
          throw error;
        }
      },
    );
  });
}
