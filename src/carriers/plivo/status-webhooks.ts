// What Plivo tells the service about calls, every request signed with the Auth Token of the account
// the call went through (webhook.ts), found by the call_id the service put in the address (or the
// call its CallUUID was recorded for), and passed on by the http room to the node running the call:
//
//   POST /telephony/plivo/status    ring_url and hangup_url: CallUUID, CallStatus (ringing | in-progress
//        | completed | busy | failed | timeout | no-answer | cancel), HangupCause, HangupCauseName —
//        mapped to the same outcomes as Twilio's (outcomes.ts). The hangup_url of a warm transfer's
//        second leg says leg=consult: one never answered (busy | failed | timeout | no-answer | cancel)
//        ends the hold, the caller back with the agent; its end after an answer is the bridge's or the
//        stream's to tell, and changes nothing here.
//   POST /telephony/plivo/machine   machine_detection_url: Machine=true when a machine answered.
//   POST /telephony/plivo/transfer  a cold transfer's aleg_url (dialer.ts): answers a <Dial> of the
//        number in its address (xml.ts), whose callbackUrl and action come back here:
//   POST /telephony/plivo/transfer/progress  DialAction=answer once the new leg answered: the call
//        ends as call_transfer.
//   POST /telephony/plivo/transfer/done      DialStatus (completed | busy | failed | timeout |
//        no-answer) once the dial is over: one that never connected brings the caller back to the
//        agent — the answer is a new <Stream> with the secret the session gives for it.
//   POST /telephony/plivo/conference  the aleg_url both legs of a warm transfer's bridge are moved to
//        (dialer.ts): a <Conference> of the call's own room (xml.ts).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Clock } from '../../clock.ts';
import { ApiError } from '../../errors.ts';
import type { CarrierCallRepository } from '../carrier-calls.ts';
import type { CallOutcomes } from '../outcomes.ts';
import type { PlivoAccounts } from './accounts.ts';
import type { PlivoConsultLegs } from './consult-legs.ts';
import { PLIVO_CONFERENCE_PATH, PLIVO_MACHINE_PATH, PLIVO_STATUS_PATH, PLIVO_TRANSFER_PATH } from './dialer.ts';
import { addPlivoFormParser, plivoParam, plivoParams, requestUuidOf, verifyPlivoRequest } from './webhook.ts';
import { conferenceXml, connectStreamXml, dialXml, hangUpXml } from './xml.ts';

export const PLIVO_TRANSFER_PROGRESS_PATH = `${PLIVO_TRANSFER_PATH}/progress`;
export const PLIVO_TRANSFER_DONE_PATH = `${PLIVO_TRANSFER_PATH}/done`;

const StatusForm = z.looseObject({
  CallUUID: z.string().min(1).optional(),
  CallStatus: z.string().min(1),
  HangupCause: z.string().optional(),
  HangupCauseName: z.string().optional(),
});
const CallQuery = z.looseObject({
  call_id: z.string().min(1).max(200).optional(),
  leg: z.literal('consult').optional(),
});
const TransferQuery = z.looseObject({
  call_id: z.string().min(1).max(200),
  to: z.string().regex(/^\+?[0-9]{3,20}$/),
  /** The caller id for the new leg; one that is not a number leaves Plivo's default. */
  from: z.string().optional(),
});

/** How a dial's end reads as a transfer status (outcomes.ts words it for the agent). */
export function dialStatusOf(status: string | undefined): string {
  if (status === 'busy') return 'busy';
  if (status === 'timeout' || status === 'no-answer') return 'no-answer';
  if (status === 'cancel') return 'canceled';
  return 'failed';
}

export interface PlivoStatusDeps {
  outcomes: CallOutcomes;
  carrierCalls: Pick<CarrierCallRepository, 'callIdOf'>;
  accounts: PlivoAccounts;
  clock: Clock;
  publicUrl: () => string;
  ringTimeoutMs: number;
  consultLegs: PlivoConsultLegs;
}

export function plivoStatusRoutes(app: FastifyInstance, deps: PlivoStatusDeps): void {
  /** The call a request is about, read before it is trusted: the call_id in its address, else its CallUUID's. */
  const callOf = async (request: FastifyRequest): Promise<string | undefined> => {
    const query = CallQuery.safeParse(request.query);
    if (query.success && query.data.call_id) return query.data.call_id;
    const uuid = plivoParam(request, 'CallUUID');
    return uuid ? deps.carrierCalls.callIdOf('plivo', uuid) : undefined;
  };
  /** The call, once the request is known to come from the account that call went through (403 otherwise). */
  const checked = async (request: FastifyRequest): Promise<string | undefined> => {
    const callId = await callOf(request);
    const keys = await deps.accounts.forCall(callId);
    verifyPlivoRequest(request, keys?.authToken, deps.publicUrl());
    return callId;
  };
  const config = (summary: string) => ({ doc: { summary, tag: 'telephony', public: true }, callOf });

  void app.register(async (scope) => {
    addPlivoFormParser(scope);

    scope.post(
      PLIVO_STATUS_PATH,
      { config: config("Plivo's ring and hangup callbacks (signed)") },
      async (request, reply) => {
        const callId = await checked(request);
        const form = StatusForm.safeParse(plivoParams(request));
        if (!callId || !form.success) throw new ApiError('BAD_REQUEST', 'not a Plivo callback of a call made here');
        const { CallStatus: status, HangupCause: cause } = form.data;
        if (CallQuery.safeParse(request.query).data?.leg === 'consult') {
          request.log.info({ call_id: callId, call_uuid: form.data.CallUUID, status, cause }, 'plivo transfer call');
          const placed = requestUuidOf(request);
          if (placed) deps.consultLegs.forget(placed);
          if (status !== 'completed' && status !== 'ringing' && status !== 'in-progress')
            deps.outcomes.consultFailed(callId, dialStatusOf(status));
          return reply.code(204).send();
        }
        request.log.info({ call_id: callId, call_uuid: form.data.CallUUID, status, cause }, 'plivo status');
        if (status === 'completed') await deps.outcomes.completed(callId);
        else if (status === 'no-answer' || status === 'timeout') await deps.outcomes.noAnswer(callId);
        else if (status === 'busy' || status === 'failed' || status === 'cancel')
          await deps.outcomes.failed(
            callId,
            `The carrier reported the call ${status === 'cancel' ? 'canceled' : status}${cause ? ` (${cause})` : ''}.`,
          );
        return reply.code(204).send();
      },
    );

    scope.post(
      PLIVO_MACHINE_PATH,
      { config: config("Plivo's machine detection callback (signed)") },
      async (request, reply) => {
        const callId = await checked(request);
        if (!callId) throw new ApiError('BAD_REQUEST', 'not a Plivo callback of a call made here');
        if (plivoParam(request, 'Machine') === 'true') await deps.outcomes.machineAnswered(callId);
        return reply.code(204).send();
      },
    );

    scope.post(
      PLIVO_TRANSFER_PATH,
      { config: config("A cold transfer's XML for Plivo (signed)") },
      async (request, reply) => {
        await checked(request);
        const query = TransferQuery.safeParse(request.query);
        if (!query.success) throw new ApiError('BAD_REQUEST', 'not a transfer made here');
        const publicUrl = deps.publicUrl();
        const back = new URLSearchParams({ call_id: query.data.call_id }).toString();
        return reply.type('text/xml').send(
          dialXml({
            to: query.data.to,
            callerId: /^\+?[0-9]{3,20}$/.test(query.data.from ?? '') ? query.data.from : undefined,
            timeoutS: Math.max(5, Math.round(deps.ringTimeoutMs / 1000)),
            action: `${publicUrl}${PLIVO_TRANSFER_DONE_PATH}?${back}`,
            callbackUrl: `${publicUrl}${PLIVO_TRANSFER_PROGRESS_PATH}?${back}`,
          }),
        );
      },
    );

    scope.post(
      PLIVO_CONFERENCE_PATH,
      { config: config("A warm transfer's conference XML for Plivo (signed)") },
      async (request, reply) => {
        const callId = await checked(request);
        if (!callId) throw new ApiError('BAD_REQUEST', 'not a transfer made here');
        request.log.info({ call_id: callId, call_uuid: plivoParam(request, 'CallUUID') }, 'plivo transfer bridged');
        return reply.type('text/xml').send(conferenceXml(`transfer-${callId}`));
      },
    );

    scope.post(
      PLIVO_TRANSFER_PROGRESS_PATH,
      { config: config("Plivo's <Dial> callbacks of a cold transfer (signed)") },
      async (request, reply) => {
        const callId = await checked(request);
        if (!callId) throw new ApiError('BAD_REQUEST', 'not a transfer made here');
        const action = plivoParam(request, 'DialAction');
        request.log.info({ call_id: callId, dial_action: action }, 'plivo transfer');
        if (action === 'answer') deps.outcomes.transferAnswered(callId);
        return reply.code(204).send();
      },
    );

    scope.post(
      PLIVO_TRANSFER_DONE_PATH,
      { config: config("Plivo's <Dial> action of a cold transfer (signed)") },
      async (request, reply) => {
        const callId = await checked(request);
        if (!callId) throw new ApiError('BAD_REQUEST', 'not a transfer made here');
        const status = plivoParam(request, 'DialStatus');
        request.log.info({ call_id: callId, dial_status: status }, 'plivo transfer over');
        reply.type('text/xml');
        // After an answer the call has ended as call_transfer already, and this finds no transfer under way.
        const secret = status === 'completed' ? null : deps.outcomes.transferFailed(callId, dialStatusOf(status));
        return reply.send(secret ? connectStreamXml(deps.publicUrl(), callId, secret) : hangUpXml());
      },
    );
  });
}
