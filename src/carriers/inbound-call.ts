// An inbound call a carrier's voice webhook has verified and parsed (carriers/*/voice-webhook.ts):
// the agent whose inbound_numbers holds the called number takes it (of the organization whose
// account holds the number, when one does); it is registered, recorded with the carrier's call id
// (and account, whose hang-up and transfers it then uses), and the carrier is told, in its markup,
// to open a media stream for it. An unknown number hears that it is not in service. The carrier's
// call id is unique: a webhook sent again for the same call gets the first answer, never a second
// call.
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { AgentRepository } from '../agents/repository.ts';
import type { Clock } from '../clock.ts';
import type { CallService } from '../records/service.ts';
import type { CarrierAnswers } from './carrier.ts';
import type { CarrierCallRepository } from './carrier-calls.ts';

export interface InboundCallDeps {
  agents: AgentRepository;
  calls: CallService;
  carrierCalls: CarrierCallRepository;
  publicUrl: () => string;
  answers: CarrierAnswers;
  clock: Clock;
  /** The call registered: the stream must arrive in time or the call ends. */
  onRegistered: (orgId: string, callId: string) => void;
}

/** The carrier's answers, in its own markup (TwiML, TeXML, …). */
export interface CallMarkup {
  sayAndHangUp(text: string): string;
  connectStream(publicUrl: string, callId: string, streamSecret: string): string;
}

export interface InboundCall {
  /** The carrier's name, as carrier_calls records it. */
  carrier: string;
  /** Where the carrier's answers are kept: not a valid organization id, so never one an organization's keys share. */
  namespace: string;
  carrierCallId: string;
  from: string;
  to: string;
  /** The record's metadata naming the carrier's call id (e.g. twilio_call_sid). */
  metadata: Record<string, string>;
  /** The organization's own carrier account that holds the number; none: the service-wide account. */
  carrierAccountId?: string | undefined;
  /** Only an agent of this organization takes the call (the one the account is); none: whoever lists the number. */
  orgId?: string | undefined;
}

/** The markup to answer the carrier's webhook with (a reply already sent for a conflict). */
export async function takeInboundCall(
  deps: InboundCallDeps,
  markup: CallMarkup,
  call: InboundCall,
  reply: FastifyReply,
  log: FastifyBaseLogger,
): Promise<string | FastifyReply> {
  const agent = await deps.agents.findByInboundNumber(call.to);
  if (!agent || (call.orgId !== undefined && agent.orgId !== call.orgId)) {
    log.warn({ to: call.to, carrier: call.carrier }, 'inbound call to a number no agent answers');
    return markup.sayAndHangUp('The number you have called is not in service. Goodbye.');
  }
  const claim = await deps.answers.claim(call.namespace, call.carrierCallId, call.to, deps.clock.now());
  if (claim.kind === 'replay') return claim.answer.body;
  if (claim.kind !== 'claimed') {
    log.warn(
      { carrier_call_id: call.carrierCallId, carrier: call.carrier, claim: claim.kind },
      'voice webhook for a call already answered differently',
    );
    return reply.code(409).send(markup.sayAndHangUp('This call could not be handled.'));
  }
  try {
    const { record, streamSecret } = await deps.calls.register(agent.orgId, agent, {
      call_type: 'inbound',
      call_from: call.from || null,
      call_to: call.to,
      metadata: call.metadata,
    });
    if (call.carrierAccountId !== undefined)
      await deps.carrierCalls.record(
        record.call_id,
        call.carrier,
        call.carrierCallId,
        deps.clock.now(),
        call.carrierAccountId,
      );
    deps.onRegistered(agent.orgId, record.call_id);
    // Kept with its stream secret: the secret opens this call's stream only while it waits for one.
    const answer = markup.connectStream(deps.publicUrl(), record.call_id, streamSecret);
    await deps.answers.finish(call.namespace, call.carrierCallId, { status: 200, body: answer });
    return answer;
  } catch (error) {
    await deps.answers.release(call.namespace, call.carrierCallId);
    throw error;
  }
}
