// Outbound calls, hang-up, cold and warm transfer through Plivo's REST API (PLIVO_API_BASE,
// https://api.plivo.com by default), sent through the outbound layer (net/http.ts) with HTTP basic
// auth auth_id:auth_token. The requests relied on, as Plivo documents them:
//
//   POST   /v1/Account/{auth_id}/Call/              JSON {from, to (digits, no "+"), answer_url,
//          answer_method, ring_url, ring_method, hangup_url, hangup_method, ring_timeout (s),
//          machine_detection ("true"), machine_detection_url}
//          → 201 {"message":"call fired","request_uuid":"…","api_id":"…"}; the call's CallUUID comes
//          with the answer_url request once it is answered (beside RequestUUID), and with the hangup_url one.
//   DELETE /v1/Account/{auth_id}/Call/{call_uuid}/  → 204; 404 once the call is over
//   DELETE /v1/Account/{auth_id}/Request/{request_uuid}/ → 204: a call not yet answered, cancelled
//   POST   /v1/Account/{auth_id}/Call/{call_uuid}/  JSON {legs: "aleg", aleg_url, aleg_method}
//          → 202 {"message":"call transferred","api_id":"…"}: the call leaves our stream and runs the
//          XML aleg_url answers (status-webhooks.ts: a <Dial> of the transfer number, or a <Conference>).
//   errors: 4xx {"api_id":"…","error":"…"} (the error may be a string or an object of field messages).
//
// A warm transfer is two of these. Its second leg is a call create like a placed call's, whose
// answer_url and hangup_url say leg=consult: its answer is the <Stream> with the secret it was
// placed with (voice-webhook.ts; the CallUUID it brings is kept for the bridge, consult-legs.ts),
// and a hangup_url of a leg never answered (busy, failed, timeout, no-answer) ends the hold
// (status-webhooks.ts). The bridge moves the second leg, then the caller's, with the Transfer
// request above to an aleg_url whose XML is one <Conference> named after the call, which ends when
// either leaves: our two streams end and the two people talk. Plivo's legs "both" moves a call and
// the leg its own <Dial> bridged, which the second leg is not (it is a call of its own), and its
// multiparty-call warm transfer belongs to PHLO flows built in its console: hence one conference.
//
// The official `plivo` SDK takes neither a base address nor an HTTP client of ours (it sends
// through its own axios to api.plivo.com), so the egress policy could not hold for it: the few
// requests are sent here. Plivo is reached only through an organization's own account: a call
// from a number no Plivo account of the organization holds goes on to the carriers after it.
import { voicemailHandling } from '../../agents/schema.ts';
import type { Clock } from '../../clock.ts';
import type { Dispatcher } from '../../net/http.ts';
import { CarrierApiError, placeCarrierCall, sendCarrierRequest, type CarrierAnswer } from '../carrier-rest.ts';
import {
  NoTransferError,
  type ConsultRequest,
  type DialRequest,
  type DialResult,
  type Dialer,
  type TransferRequest,
} from '../../records/dialer.ts';
import type { CarrierCallRepository } from '../carrier-calls.ts';
import { passOn } from '../pass-on.ts';
import type { PlivoAccounts, PlivoKeys } from './accounts.ts';
import type { PlivoConsultLegs } from './consult-legs.ts';
import { PLIVO_ANSWER_PATH } from './voice-webhook.ts';
import { plivoNumber } from './xml.ts';

export interface PlivoDialerOptions {
  accounts: PlivoAccounts;
  /** Where a call no Plivo account places goes (the carriers after this one). */
  next: Dialer;
  /** PLIVO_API_BASE, without a trailing slash. */
  apiBase: string;
  dispatcher: Dispatcher;
  /** The service's public address, known only once it listens. */
  publicUrl: () => string;
  ringTimeoutMs: number;
  carrierCalls: CarrierCallRepository;
  clock: Clock;
  /** The answered second legs of warm transfers, as their answer URL requests named them. */
  consultLegs: PlivoConsultLegs;
}

/** ring_url and hangup_url of the calls placed here (and the application's hangup URL for inbound ones). */
export const PLIVO_STATUS_PATH = '/telephony/plivo/status';
export const PLIVO_MACHINE_PATH = '/telephony/plivo/machine';
/** aleg_url of a cold transfer: answers the <Dial>. */
export const PLIVO_TRANSFER_PATH = '/telephony/plivo/transfer';
/** aleg_url of both legs of a warm transfer's bridge: answers the call's <Conference>. */
export const PLIVO_CONFERENCE_PATH = '/telephony/plivo/conference';
/** The mark, in its answer and hangup URLs, of a warm transfer's second leg. */
const CONSULT_LEG = { leg: 'consult' } as const;

const query = (params: Record<string, string>) => new URLSearchParams(params).toString();

export class PlivoDialer implements Dialer {
  readonly name = 'plivo';

  constructor(private readonly o: PlivoDialerOptions) {}

  /** A Plivo call goes only from a number of the organization's own account: others are the next carrier's. */
  showsCallerId(to: string): boolean {
    return this.o.next.showsCallerId(to);
  }

  async dial(request: DialRequest): Promise<DialResult> {
    const from = request.presentationNumber ?? request.from;
    const keys = await this.o.accounts.forOutbound(request.orgId, from);
    if (!keys) return this.o.next.dial(request);
    const body = this.streamedCall(request.callId, request.to, from, request.streamSecret, {});
    body.ring_url = body.hangup_url!;
    body.ring_method = 'POST';
    // Plivo's own detection is one more input beside the service's, which hears the audio itself.
    if (voicemailHandling(request.agent.config)) {
      body.machine_detection = 'true';
      body.machine_detection_url = `${this.o.publicUrl()}${PLIVO_MACHINE_PATH}?${query({ call_id: request.callId })}`;
      body.machine_detection_method = 'POST';
    }
    // Until the answer URL names the CallUUID, the request is what a hang-up cancels.
    return placeCarrierCall({
      carrier: 'Plivo',
      dialer: this.name,
      callId: request.callId,
      carrierAccountId: keys.carrierAccountId,
      carrierCalls: this.o.carrierCalls,
      clock: this.o.clock,
      send: () => this.send(keys, 'POST', '/Call/', body),
      idOf: requestUuidOf,
      idName: 'request_uuid',
      errorOf,
    });
  }

  async hangUpCall(callId: string): Promise<void> {
    const keys = await this.o.accounts.forCall(callId);
    if (!keys) return this.o.next.hangUpCall?.(callId);
    const uuid = await this.o.carrierCalls.carrierCallId(callId);
    if (!uuid) return;
    const id = encodeURIComponent(uuid);
    const call = await this.send(keys, 'DELETE', `/Call/${id}/`);
    if (call.status < 300) return;
    if (call.status !== 404)
      throw new CarrierApiError(`Plivo answered HTTP ${call.status} to a hang-up: ${errorOf(call)}`, call.status);
    // No such call: the id may still be the request's (not answered yet), or the call is over.
    const pending = await this.send(keys, 'DELETE', `/Request/${id}/`);
    if (pending.status < 300 || pending.status === 404) return;
    throw new CarrierApiError(`Plivo answered HTTP ${pending.status} to a cancel: ${errorOf(pending)}`, pending.status);
  }

  /** Moves the live call to `to`: Plivo ends our stream and runs the <Dial> the transfer route answers. */
  async transfer(request: TransferRequest): Promise<void> {
    const keys = await this.o.accounts.forCall(request.callId);
    if (!keys) return passOn(this.o.next.transfer?.bind(this.o.next), request, 'transfer it');
    // The <Dial> rings a <Number>: anything else would leave the caller with an XML Plivo cannot run.
    if (!/^\+?[0-9]{3,20}$/.test(request.to))
      throw new NoTransferError(`a Plivo call can be transferred to a phone number only, not ${request.to}`);
    const params: Record<string, string> = { call_id: request.callId, to: request.to };
    if (request.from) params.from = request.from;
    await this.move(keys, request.carrierCallId, `${PLIVO_TRANSFER_PATH}?${query(params)}`, 'a transfer');
  }

  /**
   * Places a warm transfer's second leg: answered, it streams to the service with `streamSecret`; one never answered
   * is reported to the status route (leg=consult). Resolves with its request_uuid.
   */
  async consult(request: ConsultRequest): Promise<{ carrierCallId: string }> {
    const keys = await this.o.accounts.forCall(request.callId);
    if (!keys) return passOn(this.o.next.consult?.bind(this.o.next), request, 'place a transfer call');
    // Plivo places no call without a caller id: the call's own number (the organization's) is it.
    if (!request.from) throw new NoTransferError('a Plivo transfer call needs the number to call from');
    const body = this.streamedCall(request.callId, request.to, request.from, request.streamSecret, CONSULT_LEG);
    const answer = await this.send(keys, 'POST', '/Call/', body);
    const requestUuid = answer.status === 200 || answer.status === 201 ? requestUuidOf(answer.body) : undefined;
    if (requestUuid) return { carrierCallId: requestUuid };
    throw new CarrierApiError(
      `Plivo answered HTTP ${answer.status} to a transfer's call: ${errorOf(answer)}`,
      answer.status,
    );
  }

  /** Moves the second leg, then the caller's, into the call's conference: Plivo ends both our streams. */
  async bridge(request: { callId: string; carrierCallId: string; consultCarrierCallId: string }): Promise<void> {
    const keys = await this.o.accounts.forCall(request.callId);
    if (!keys) return passOn(this.o.next.bridge?.bind(this.o.next), request, 'bridge its transfer');
    const consultUuid = this.o.consultLegs.take(request.consultCarrierCallId);
    if (!consultUuid)
      throw new CarrierApiError(`Plivo never answered the transfer call of call ${request.callId}`, undefined);
    const conference = `${PLIVO_CONFERENCE_PATH}?${query({ call_id: request.callId })}`;
    for (const uuid of [consultUuid, request.carrierCallId])
      await this.move(keys, uuid, conference, "a transfer's bridge");
  }

  /**
   * The create request of a call whose answer streams to the service (call_id and `secret` in the answer URL's query,
   * with `mark`), its hang-up reported to the status route (with `mark`).
   */
  private streamedCall(
    callId: string,
    to: string,
    from: string,
    secret: string,
    mark: Record<string, string>,
  ): Record<string, string | number> {
    const publicUrl = this.o.publicUrl();
    return {
      from: plivoNumber(from),
      to: plivoNumber(to),
      answer_url: `${publicUrl}${PLIVO_ANSWER_PATH}?${query({ call_id: callId, secret, ...mark })}`,
      answer_method: 'POST',
      hangup_url: `${publicUrl}${PLIVO_STATUS_PATH}?${query({ call_id: callId, ...mark })}`,
      hangup_method: 'POST',
      ring_timeout: Math.max(1, Math.round(this.o.ringTimeoutMs / 1000)),
    };
  }

  /** Transfers the live call `uuid` to the XML the service answers at `path` (with its query). */
  private async move(keys: PlivoKeys, uuid: string, path: string, what: string): Promise<void> {
    const answer = await this.send(keys, 'POST', `/Call/${encodeURIComponent(uuid)}/`, {
      legs: 'aleg',
      aleg_url: `${this.o.publicUrl()}${path}`,
      aleg_method: 'POST',
    });
    if (answer.status >= 200 && answer.status < 300) return;
    throw new CarrierApiError(`Plivo answered HTTP ${answer.status} to ${what}: ${errorOf(answer)}`, answer.status);
  }

  /** One request to /v1/Account/{auth_id}{path}. */
  private send(
    keys: PlivoKeys,
    method: 'POST' | 'DELETE',
    path: string,
    body?: Record<string, unknown>,
  ): Promise<CarrierAnswer> {
    const url = `${this.o.apiBase}/v1/Account/${encodeURIComponent(keys.authId)}${path}`;
    const authorization = `Basic ${Buffer.from(`${keys.authId}:${keys.authToken}`).toString('base64')}`;
    return sendCarrierRequest('Plivo', { method, url, headers: { authorization }, json: body }, this.o.dispatcher);
  }
}

/** The create's request_uuid. */
function requestUuidOf(body: Record<string, unknown>): string | undefined {
  return typeof body.request_uuid === 'string' && body.request_uuid !== '' ? body.request_uuid : undefined;
}

/** Plivo's error: a string, or an object of messages per field, as one line. */
function errorOf(answer: CarrierAnswer): string {
  const error = answer.body.error;
  if (typeof error === 'string') return error.slice(0, 300);
  if (error && typeof error === 'object') return JSON.stringify(error).slice(0, 300);
  return '';
}
