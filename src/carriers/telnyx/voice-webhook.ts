// POST /telephony/telnyx/voice: the TeXML application's voice webhook for inbound calls. The
// number called must be on an organization's Telnyx account, whose public key checks the signature
// (403 and no record otherwise); an agent of that organization takes the call as every carrier's
// are (carriers/inbound-call.ts), recorded with the account (its hang-up and transfers use it), and
// answered in TeXML.
//
// The form fields relied on (TeXML's, as Telnyx documents them): CallSid (the call_control_id),
// From, To (besides AccountSid, CallStatus, Direction, ConnectionId, which it does not read).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { type InboundCallDeps, takeInboundCall } from '../inbound-call.ts';
import type { TelnyxAccounts } from './accounts.ts';
import { connectStreamTexml, sayAndHangUpTexml, streamCodecFor } from './texml.ts';
import { addSignedBodyParsers, bodyField, verifyTelnyxRequest } from './webhook.ts';

/** Not a valid organization id, so carrier answers never share keys with an organization's. */
const CARRIER_NAMESPACE = '~telnyx';

const VoiceWebhook = z.looseObject({
  CallSid: z.string().min(1).max(300),
  From: z.string().default(''),
  To: z.string().min(1),
});

export interface TelnyxVoiceDeps extends InboundCallDeps {
  accounts: TelnyxAccounts;
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
        return takeInboundCall(
          deps,
          {
            sayAndHangUp: sayAndHangUpTexml,
            // A caller on a SIP or WebRTC leg may speak G.722: their stream is asked for it (texml.ts).
            connectStream: (publicUrl, callId, secret) =>
              connectStreamTexml(publicUrl, callId, secret, streamCodecFor(form.data.From)),
          },
          {
            carrier: 'telnyx',
            namespace: CARRIER_NAMESPACE,
            carrierCallId: form.data.CallSid,
            from: form.data.From,
            to: form.data.To,
            metadata: { telnyx_call_sid: form.data.CallSid },
            carrierAccountId: held.keys.carrierAccountId,
            orgId: held.orgId,
          },
          reply,
          request.log,
        );
      },
    );
  });
}
