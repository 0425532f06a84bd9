// POST /telephony/vonage/event: the Voice API's call events, for the calls the service placed (the
// create call's event_url names the call_id) and, as the application's event URL, for inbound ones
// (found by the uuid the answer URL recorded). As Vonage documents them, JSON
//   {"uuid","conversation_uuid","from","to","direction","timestamp","status": "started"|"ringing"|
//    "answered"|"machine"|"human"|"busy"|"timeout"|"unanswered"|"rejected"|"failed"|"cancelled"|
//    "completed", "detail"?: "…"}
// mapped to the same outcomes as Twilio's (carriers/outcomes.ts): busy, rejected, failed and
// cancelled end a call not yet connected as dial_failed; timeout and unanswered as dial_no_answer;
// machine is an answering machine; completed is the carrier call over. An event about another leg
// of the call (the websocket's own) is not the call's and changes nothing. The events of a warm
// transfer's second leg say leg=consult: one that ends unanswered (busy, timeout, unanswered,
// rejected, failed, cancelled) ends the hold, the caller back with the agent; the others change
// nothing (the leg's stream, then the bridge, carry the rest).
// POST /telephony/vonage/transfer: the events of a cold transfer's new leg (its connect action's
// eventUrl, synchronous): answered moves the caller on (call_transfer); a leg that ends unanswered
// is answered with an NCCO that brings the caller back to the agent on a new stream.
// Both are signed with the secret of the account the call went through, and reach whichever node
// Vonage calls (the http room passes them on to the node running the call).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Clock } from '../../clock.ts';
import { ApiError } from '../../errors.ts';
import type { CarrierCallRepository } from '../carrier-calls.ts';
import type { CallOutcomes } from '../outcomes.ts';
import type { VonageAccounts } from './accounts.ts';
import { TRANSFER_CALLBACK_PATH } from './dialer.ts';
import { connectWebsocketNcco, EVENT_CALLBACK_PATH } from './ncco.ts';
import { addSignedJsonParser, verifyVonageRequest, webhookField } from './webhook.ts';

const CallEvent = z.looseObject({
  uuid: z.string().min(1).max(300),
  status: z.string().min(1).max(50),
  detail: z.string().max(200).optional(),
});
const CallQuery = z.strictObject({
  call_id: z.string().min(1).max(200).optional(),
  leg: z.literal('consult').optional(),
});

/** A Vonage leg status as the dial status outcomes.ts words for the agent; undefined: not a failed dial. */
export function dialStatusOf(status: string): 'busy' | 'no-answer' | 'failed' | 'canceled' | undefined {
  switch (status) {
    case 'busy':
      return 'busy';
    case 'timeout':
    case 'unanswered':
      return 'no-answer';
    case 'rejected':
    case 'failed':
      return 'failed';
    case 'cancelled':
      return 'canceled';
    default:
      return undefined;
  }
}

export interface VonageEventDeps {
  outcomes: CallOutcomes;
  carrierCalls: Pick<CarrierCallRepository, 'callIdOf' | 'carrierCallId'>;
  accounts: VonageAccounts;
  clock: Clock;
  publicUrl: () => string;
}

export function vonageEventRoutes(app: FastifyInstance, deps: VonageEventDeps): void {
  /**
   * The call an event is about, read before the body is validated (or trusted): the call_id in its address, else the
   * call its uuid was recorded for.
   */
  const callOf = async (request: FastifyRequest): Promise<string | undefined> => {
    const query = CallQuery.safeParse(request.query);
    if (query.success && query.data.call_id) return query.data.call_id;
    const uuid = webhookField(request, 'uuid');
    return uuid ? deps.carrierCalls.callIdOf('vonage', uuid) : undefined;
  };
  void app.register(async (scope) => {
    addSignedJsonParser(scope);
    /** The call and its event, once the account the call went through is known to have sent it (403 otherwise). */
    const checked = async (request: FastifyRequest): Promise<{ callId: string; event: z.infer<typeof CallEvent> }> => {
      const callId = await callOf(request);
      await verifyVonageRequest(request, await deps.accounts.forCall(callId), deps.clock.now());
      const event = CallEvent.safeParse(request.body);
      if (!callId || !event.success) throw new ApiError('BAD_REQUEST', 'not a Voice API event of a call made here');
      return { callId, event: event.data };
    };

    scope.post(
      EVENT_CALLBACK_PATH,
      {
        config: {
          doc: { summary: "Vonage's Voice API call events (signed)", tag: 'telephony', public: true },
          callOf,
        },
      },
      async (request, reply) => {
        const { callId, event } = await checked(request);
        if (CallQuery.safeParse(request.query).data?.leg === 'consult') {
          request.log.info({ call_id: callId, uuid: event.uuid, status: event.status }, 'vonage transfer call');
          const failed = dialStatusOf(event.status);
          if (failed) deps.outcomes.consultFailed(callId, failed);
          return reply.code(204).send();
        }
        const recorded = await deps.carrierCalls.carrierCallId(callId);
        const ours = !recorded || recorded === event.uuid;
        request.log.info({ call_id: callId, uuid: event.uuid, status: event.status, ours }, 'vonage event');
        if (!ours) return reply.code(204).send();
        const failed = dialStatusOf(event.status);
        if (event.status === 'completed') await deps.outcomes.completed(callId);
        else if (event.status === 'machine') await deps.outcomes.machineAnswered(callId);
        else if (failed === 'no-answer') await deps.outcomes.noAnswer(callId);
        else if (failed)
          await deps.outcomes.failed(
            callId,
            `The carrier reported the call ${event.status}${event.detail ? ` (${event.detail})` : ''}.`,
          );
        return reply.code(204).send();
      },
    );

    scope.post(
      TRANSFER_CALLBACK_PATH,
      {
        config: {
          doc: { summary: "Vonage's events for a cold transfer's new leg (signed)", tag: 'telephony', public: true },
          callOf,
        },
      },
      async (request, reply) => {
        const { callId, event } = await checked(request);
        request.log.info({ call_id: callId, status: event.status, detail: event.detail }, 'vonage transfer');
        if (event.status === 'answered') deps.outcomes.transferAnswered(callId);
        const failed = dialStatusOf(event.status);
        // After an answer the call has ended as call_transfer already, and this finds no transfer under way.
        const secret = failed ? deps.outcomes.transferFailed(callId, failed) : null;
        if (!secret) return reply.code(204).send();
        // The connect was synchronous: the call goes on with this NCCO, the caller back on a stream to the agent.
        return reply.type('application/json').send(connectWebsocketNcco(deps.publicUrl(), callId, secret));
      },
    );
  });
}
