// POST /telephony/telnyx/status: TeXML status callbacks for the calls the service placed (form
// fields CallSid, CallStatus initiated|ringing|in-progress|completed|busy|no-answer|failed|canceled,
// AnsweredBy with machine detection), mapped to the same outcomes as Twilio's. The call is the
// call_id the service put in the callback's address, or, when the TeXML application's own status
// callback points here, the call its CallSid was recorded for. A warm transfer's second leg reports
// here too, marked leg=consult: busy, no-answer, failed or canceled ends the caller's hold.
// POST /telephony/telnyx/transfer: the Call Control events of a cold transfer's new leg, JSON
// {"data":{"event_type":"call.answered"|"call.bridged"|"call.hangup"|…,"payload":{"call_control_id",
// "hangup_cause":"normal_clearing"|"busy"|"timeout"|"no_answer"|"call_rejected"|…}}}: answered moves
// the caller on (call_transfer); a leg that ends unanswered brings the caller back to the agent on
// a new stream. Both are signed with the key of the account the call went through, and reach
// whichever node Telnyx calls (the http room passes them on to the node running the call).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Clock } from '../../clock.ts';
import { ApiError } from '../../errors.ts';
import type { CarrierCallRepository } from '../carrier-calls.ts';
import type { CallOutcomes } from '../outcomes.ts';
import type { TelnyxAccounts } from './accounts.ts';
import { STATUS_CALLBACK_PATH, TRANSFER_CALLBACK_PATH } from './dialer.ts';
import { addSignedBodyParsers, bodyField, verifyTelnyxRequest } from './webhook.ts';

const StatusForm = z.looseObject({
  CallSid: z.string().min(1),
  CallStatus: z.string().min(1),
  AnsweredBy: z.string().optional(),
  SipResponseCode: z.string().optional(),
});
const CallQuery = z.strictObject({
  call_id: z.string().min(1).max(200).optional(),
  leg: z.literal('consult').optional(),
});
/** How a warm transfer's second leg ends without connecting: the caller's hold ends. */
const CONSULT_FAILURES = new Set(['busy', 'no-answer', 'failed', 'canceled']);

const TransferEvent = z.looseObject({
  data: z.looseObject({
    event_type: z.string(),
    payload: z.looseObject({ hangup_cause: z.string().optional() }).optional(),
  }),
});

/** How a transfer leg's hang-up cause reads as a dial status (outcomes.ts words it for the agent). */
function dialStatusOf(cause: string | undefined): string {
  if (cause === 'user_busy') return 'busy';
  if (cause === 'timeout' || cause === 'no_answer') return 'no-answer';
  if (cause === 'originator_cancel') return 'canceled';
  return 'failed';
}

export interface TelnyxStatusDeps {
  outcomes: CallOutcomes;
  carrierCalls: Pick<CarrierCallRepository, 'callIdOf'>;
  accounts: TelnyxAccounts;
  clock: Clock;
  /** The caller of a failed transfer back on a new stream presenting `secret`. */
  restream: (callId: string, secret: string) => Promise<void>;
}

export function telnyxStatusRoutes(app: FastifyInstance, deps: TelnyxStatusDeps): void {
  /**
   * The call a callback is about, read before the body is validated (or trusted): the call_id in its address, else
   * the call its CallSid was recorded for.
   */
  const callOf = async (request: FastifyRequest): Promise<string | undefined> => {
    const query = CallQuery.safeParse(request.query);
    if (query.success && query.data.call_id) return query.data.call_id;
    const sid = bodyField(request, 'CallSid');
    return sid ? deps.carrierCalls.callIdOf('telnyx', sid) : undefined;
  };
  void app.register(async (scope) => {
    addSignedBodyParsers(scope, { json: true });
    /** The call, once the request is known to come from the account that call went through (403 otherwise). */
    const checked = async (request: FastifyRequest): Promise<string | undefined> => {
      const callId = await callOf(request);
      const keys = await deps.accounts.forCall(callId);
      verifyTelnyxRequest(request, keys?.publicKey, deps.clock.now());
      return callId;
    };

    scope.post(
      STATUS_CALLBACK_PATH,
      {
        config: {
          doc: { summary: "Telnyx's TeXML status callback for placed calls (signed)", tag: 'telephony', public: true },
          callOf,
        },
      },
      async (request, reply) => {
        const callId = await checked(request);
        const form = StatusForm.safeParse(request.body);
        if (!callId || !form.success)
          throw new ApiError('BAD_REQUEST', 'not a TeXML status callback of a call placed here');
        const { CallStatus: status, AnsweredBy: answeredBy } = form.data;
        if (CallQuery.safeParse(request.query).data?.leg === 'consult') {
          // A warm transfer's second leg: only a dial that never connected matters to the call.
          request.log.info({ call_id: callId, call_sid: form.data.CallSid, status }, 'telnyx status of a transfer leg');
          if (CONSULT_FAILURES.has(status)) deps.outcomes.consultFailed(callId, status);
          return reply.code(204).send();
        }
        request.log.info(
          { call_id: callId, call_sid: form.data.CallSid, status, answered_by: answeredBy },
          'telnyx status',
        );
        const byMachine = answeredBy?.startsWith('machine') === true || answeredBy === 'fax';
        if (status === 'completed') await deps.outcomes.completed(callId, byMachine);
        else if (byMachine) await deps.outcomes.machineAnswered(callId);
        else if (status === 'no-answer') await deps.outcomes.noAnswer(callId);
        else if (status === 'busy' || status === 'failed' || status === 'canceled')
          await deps.outcomes.failed(
            callId,
            `The carrier reported the call ${status}${form.data.SipResponseCode ? ` (SIP ${form.data.SipResponseCode})` : ''}.`,
          );
        return reply.code(204).send();
      },
    );

    scope.post(
      TRANSFER_CALLBACK_PATH,
      {
        config: {
          doc: {
            summary: "Telnyx's Call Control events for a cold transfer's new leg (signed)",
            tag: 'telephony',
            public: true,
          },
          callOf,
        },
      },
      async (request, reply) => {
        const callId = await checked(request);
        const event = TransferEvent.safeParse(request.body);
        if (!callId || !event.success)
          throw new ApiError('BAD_REQUEST', 'not a Call Control event of a transfer made here');
        const { event_type: type, payload } = event.data.data;
        request.log.info({ call_id: callId, event: type, cause: payload?.hangup_cause }, 'telnyx transfer');
        if (type === 'call.answered' || type === 'call.bridged') deps.outcomes.transferAnswered(callId);
        else if (type === 'call.hangup') {
          // After an answer the call has ended as call_transfer already, and this finds no transfer under way.
          const secret = deps.outcomes.transferFailed(callId, dialStatusOf(payload?.hangup_cause));
          if (secret)
            await deps
              .restream(callId, secret)
              .catch((error: unknown) =>
                request.log.error(
                  { err: error, call_id: callId },
                  'the caller of a failed transfer could not be streamed back',
                ),
              );
        }
        return reply.code(204).send();
      },
    );
  });
}
