// Outbound calls, hang-up and cold transfer through Plivo's REST API (PLIVO_API_BASE,
// https://api.plivo.com by default), sent through the outbound layer (net/http.ts) with HTTP basic
// auth auth_id:auth_token. The requests relied on, as Plivo documents them:
//
//   POST   /v1/Account/{auth_id}/Call/              JSON {from, to (digits, no "+"), answer_url,
//          answer_method, ring_url, ring_method, hangup_url, hangup_method, ring_timeout (s),
//          machine_detection ("true"), machine_detection_url}
//          → 201 {"message":"call fired","request_uuid":"…","api_id":"…"}; the call's CallUUID comes
//          with the answer_url request once it is answered, and with the hangup_url one.
//   DELETE /v1/Account/{auth_id}/Call/{call_uuid}/  → 204; 404 once the call is over
//   DELETE /v1/Account/{auth_id}/Request/{request_uuid}/ → 204: a call not yet answered, cancelled
//   POST   /v1/Account/{auth_id}/Call/{call_uuid}/  JSON {legs: "aleg", aleg_url, aleg_method}
//          → 202 {"message":"call transferred","api_id":"…"}: the call leaves our stream and runs the
//          XML aleg_url answers (status-webhooks.ts: a <Dial> of the transfer number).
//   errors: 4xx {"api_id":"…","error":"…"} (the error may be a string or an object of field messages).
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
import type { PlivoAccounts, PlivoKeys } from './accounts.ts';
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
}

/** ring_url and hangup_url of the calls placed here (and the application's hangup URL for inbound ones). */
export const PLIVO_STATUS_PATH = '/telephony/plivo/status';
export const PLIVO_MACHINE_PATH = '/telephony/plivo/machine';
/** aleg_url of a cold transfer: answers the <Dial>. */
export const PLIVO_TRANSFER_PATH = '/telephony/plivo/transfer';

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
    const publicUrl = this.o.publicUrl();
    const status = `${publicUrl}${PLIVO_STATUS_PATH}?${query({ call_id: request.callId })}`;
    const body: Record<string, string | number> = {
      from: plivoNumber(from),
      to: plivoNumber(request.to),
      answer_url: `${publicUrl}${PLIVO_ANSWER_PATH}?${query({ call_id: request.callId, secret: request.streamSecret })}`,
      answer_method: 'POST',
      ring_url: status,
      ring_method: 'POST',
      hangup_url: status,
      hangup_method: 'POST',
      ring_timeout: Math.max(1, Math.round(this.o.ringTimeoutMs / 1000)),
    };
    // Plivo's own detection is one more input beside the service's, which hears the audio itself.
    if (voicemailHandling(request.agent.config)) {
      body.machine_detection = 'true';
      body.machine_detection_url = `${publicUrl}${PLIVO_MACHINE_PATH}?${query({ call_id: request.callId })}`;
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
      idOf: (answer) =>
        typeof answer.request_uuid === 'string' && answer.request_uuid !== '' ? answer.request_uuid : undefined,
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
    if (!keys) {
      if (this.o.next.transfer) return this.o.next.transfer(request);
      throw new NoTransferError(`no carrier account is known for call ${request.callId} to transfer it through`);
    }
    // The <Dial> rings a <Number>: anything else would leave the caller with an XML Plivo cannot run.
    if (!/^\+?[0-9]{3,20}$/.test(request.to))
      throw new NoTransferError(`a Plivo call can be transferred to a phone number only, not ${request.to}`);
    const params: Record<string, string> = { call_id: request.callId, to: request.to };
    if (request.from) params.from = request.from;
    const answer = await this.send(keys, 'POST', `/Call/${encodeURIComponent(request.carrierCallId)}/`, {
      legs: 'aleg',
      aleg_url: `${this.o.publicUrl()}${PLIVO_TRANSFER_PATH}?${query(params)}`,
      aleg_method: 'POST',
    });
    if (answer.status >= 200 && answer.status < 300) return;
    throw new CarrierApiError(`Plivo answered HTTP ${answer.status} to a transfer: ${errorOf(answer)}`, answer.status);
  }

  /** Warm transfers are not bridged on Plivo yet: a call of the carriers after it may be. */
  async consult(request: ConsultRequest): Promise<{ carrierCallId: string }> {
    if ((await this.o.accounts.forCall(request.callId)) || !this.o.next.consult)
      throw new NoTransferError('a warm transfer is not offered on Plivo calls yet; use a cold transfer');
    return this.o.next.consult(request);
  }

  async bridge(request: { callId: string; carrierCallId: string; consultCarrierCallId: string }): Promise<void> {
    if ((await this.o.accounts.forCall(request.callId)) || !this.o.next.bridge)
      throw new NoTransferError('a warm transfer is not offered on Plivo calls yet; use a cold transfer');
    return this.o.next.bridge(request);
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

/** Plivo's error: a string, or an object of messages per field, as one line. */
function errorOf(answer: CarrierAnswer): string {
  const error = answer.body.error;
  if (typeof error === 'string') return error.slice(0, 300);
  if (error && typeof error === 'object') return JSON.stringify(error).slice(0, 300);
  return '';
}
