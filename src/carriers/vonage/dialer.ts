// Outbound calls, hang-up, cold and warm transfer through Vonage's Voice API (VONAGE_API_BASE,
// https://api.nexmo.com by default), sent through the outbound layer (net/http.ts) with a bearer
// JWT the account's Voice application signs with its private key (RS256; claims application_id,
// iat, exp, jti). The requests relied on, as Vonage documents them:
//
//   POST /v1/calls   JSON {to: [{type: "phone", number}], from: {type: "phone", number}, ncco: […],
//        event_url: ["https://…"], event_method: "POST", ringing_timer: <s>, machine_detection: "continue"}
//        → 201 {uuid, status: "started", direction: "outbound", conversation_uuid}
//        The call's events then come to event_url (event-webhooks.ts). random_from_number: true
//        instead of from: a number of the application's own.
//   PUT /v1/calls/{uuid}   JSON {action: "hangup"} → 204
//   PUT /v1/calls/{uuid}   JSON {action: "transfer", destination: {type: "ncco", ncco: […]}} → 204
//   errors: 4xx {type, title, detail, instance}; 404 for a call that has ended.
//
// Like Twilio's, the stream NCCO goes inline with the call (ncco.ts), its secret as a header of the
// websocket endpoint. A warm transfer's second leg is a call created the same way, its event_url
// marked leg=consult (a leg never answered ends the hold: event-webhooks.ts); the create answers
// its uuid at once. The bridge transfers that leg, then the caller's, to an NCCO joining one
// conversation named after the call, which ends when either leaves (ncco.ts): the transfer takes
// each leg off its websocket NCCO, so our two streams end. (The NCCO's own transfer action moves
// legs into an existing conversation, but the caller's is the one it shares with our websocket.)
// Vonage is reached only through an organization's own account: a call from a number no Vonage
// account of the organization holds goes on to the carriers after Vonage.
import { createPrivateKey, randomUUID, type KeyObject } from 'node:crypto';
import { voicemailHandling } from '../../agents/schema.ts';
import type { Clock } from '../../clock.ts';
import type { Dispatcher } from '../../net/http.ts';
import { CarrierApiError, placeCarrierCall, sendCarrierRequest, type CarrierAnswer } from '../carrier-rest.ts';
import {
  type ConsultRequest,
  type DialRequest,
  type DialResult,
  type Dialer,
  type TransferRequest,
} from '../../records/dialer.ts';
import type { CarrierCallRepository } from '../carrier-calls.ts';
import { passOn } from '../pass-on.ts';
import { vonageNumberOf, type VonageAccounts, type VonageKeys } from './accounts.ts';
import { applicationToken } from './token.ts';
import { connectWebsocketNcco, conversationNcco, EVENT_CALLBACK_PATH, transferNcco, type NccoAction } from './ncco.ts';

export interface VonageDialerOptions {
  accounts: VonageAccounts;
  /** Where a call no Vonage account places goes (the carriers after this one). */
  next: Dialer;
  /** VONAGE_API_BASE, without a trailing slash. */
  apiBase: string;
  dispatcher: Dispatcher;
  /** The service's public address, known only once it listens. */
  publicUrl: () => string;
  ringTimeoutMs: number;
  carrierCalls: CarrierCallRepository;
  clock: Clock;
  /** Each API token's jti (injected in tests). */
  randomId?: () => string;
}

/** Where a cold transfer's new leg reports (its connect action's eventUrl). */
export const TRANSFER_CALLBACK_PATH = '/telephony/vonage/transfer';

export class VonageDialer implements Dialer {
  readonly name = 'vonage';
  /** Each account's private key as node holds it, by its PEM. */
  private readonly keys = new Map<string, KeyObject>();

  constructor(private readonly o: VonageDialerOptions) {}

  /** A Vonage call goes only from a number of the organization's own account: others are the next carrier's. */
  showsCallerId(to: string): boolean {
    return this.o.next.showsCallerId(to);
  }

  async dial(request: DialRequest): Promise<DialResult> {
    const from = request.presentationNumber ?? request.from;
    const keys = await this.o.accounts.forOutbound(request.orgId, from);
    if (!keys) return this.o.next.dial(request);
    const body = this.streamedCall(request.callId, request.to, from, request.streamSecret, '');
    // Vonage's own detection is one more input beside the service's, which hears the audio itself.
    if (voicemailHandling(request.agent.config)) body.machine_detection = 'continue';
    return placeCarrierCall({
      carrier: 'Vonage',
      dialer: this.name,
      callId: request.callId,
      carrierAccountId: keys.carrierAccountId,
      carrierCalls: this.o.carrierCalls,
      clock: this.o.clock,
      send: () => this.send(keys, 'POST', '/v1/calls', body),
      idOf: uuidOf,
      idName: 'uuid',
      errorOf,
    });
  }

  async hangUpCall(callId: string): Promise<void> {
    const keys = await this.o.accounts.forCall(callId);
    if (!keys) return this.o.next.hangUpCall?.(callId);
    const uuid = await this.o.carrierCalls.carrierCallId(callId);
    if (uuid) await this.modify(keys, uuid, { action: 'hangup' }, 'a hang-up', true);
  }

  /** Moves the live call to `to`: Vonage leaves our stream and dials it; how it went comes to the transfer callback. */
  async transfer(request: TransferRequest): Promise<void> {
    const keys = await this.o.accounts.forCall(request.callId);
    if (!keys) return passOn(this.o.next.transfer?.bind(this.o.next), request, 'transfer it');
    const ncco = transferNcco({
      to: request.to,
      from: request.from,
      timeoutS: Math.max(5, Math.round(this.o.ringTimeoutMs / 1000)),
      eventUrl: `${this.o.publicUrl()}${TRANSFER_CALLBACK_PATH}?call_id=${encodeURIComponent(request.callId)}`,
    });
    await this.transferTo(keys, await this.callerUuid(request), ncco, 'a transfer');
  }

  /**
   * Places a warm transfer's second leg: answered, it streams to the service with `streamSecret`; one never answered
   * is reported to the event route (leg=consult). Resolves with its uuid.
   */
  async consult(request: ConsultRequest): Promise<{ carrierCallId: string }> {
    const keys = await this.o.accounts.forCall(request.callId);
    if (!keys) return passOn(this.o.next.consult?.bind(this.o.next), request, 'place a transfer call');
    const body = this.streamedCall(request.callId, request.to, request.from, request.streamSecret, '&leg=consult');
    const answer = await this.send(keys, 'POST', '/v1/calls', body);
    const uuid = answer.status === 200 || answer.status === 201 ? uuidOf(answer.body) : undefined;
    if (uuid) return { carrierCallId: uuid };
    throw new CarrierApiError(
      `Vonage answered HTTP ${answer.status} to a transfer's call: ${errorOf(answer)}`,
      answer.status,
    );
  }

  /** Moves the second leg, then the caller's, into the call's conversation: Vonage ends both our streams. */
  async bridge(request: { callId: string; carrierCallId: string; consultCarrierCallId: string }): Promise<void> {
    const keys = await this.o.accounts.forCall(request.callId);
    if (!keys) return passOn(this.o.next.bridge?.bind(this.o.next), request, 'bridge its transfer');
    const ncco = conversationNcco(`transfer-${request.callId}`);
    for (const uuid of [request.consultCarrierCallId, await this.callerUuid(request)])
      await this.transferTo(keys, uuid, ncco, "a transfer's bridge");
  }

  /**
   * The caller's uuid. The stream may have opened before the create call's answer was read: its carrierCallId is then
   * the call_id, and the uuid the one recorded since.
   */
  private async callerUuid(request: { callId: string; carrierCallId: string }): Promise<string> {
    return (await this.o.carrierCalls.carrierCallId(request.callId)) || request.carrierCallId;
  }

  /**
   * The create request of a call connected to the service's media WebSocket (call_id and `secret` as its headers), its
   * events to the event route (`mark` added to its query).
   */
  private streamedCall(
    callId: string,
    to: string,
    from: string | null,
    secret: string,
    mark: string,
  ): Record<string, unknown> {
    const publicUrl = this.o.publicUrl();
    return {
      to: [{ type: 'phone', number: vonageNumberOf(to) }],
      ...(from ? { from: { type: 'phone', number: vonageNumberOf(from) } } : { random_from_number: true }),
      ncco: connectWebsocketNcco(publicUrl, callId, secret),
      event_url: [`${publicUrl}${EVENT_CALLBACK_PATH}?call_id=${encodeURIComponent(callId)}${mark}`],
      event_method: 'POST',
      ringing_timer: Math.min(120, Math.max(1, Math.round(this.o.ringTimeoutMs / 1000))),
    };
  }

  /** PUT /v1/calls/{uuid} {action: "transfer"}: the live leg leaves its NCCO for `ncco`. */
  private transferTo(keys: VonageKeys, uuid: string, ncco: NccoAction[], what: string): Promise<void> {
    return this.modify(keys, uuid, { action: 'transfer', destination: { type: 'ncco', ncco } }, what);
  }

  /** PUT /v1/calls/{uuid}; `goneIsOk`: a call Vonage no longer knows (404) has ended already. */
  private async modify(
    keys: VonageKeys,
    uuid: string,
    body: Record<string, unknown>,
    what: string,
    goneIsOk = false,
  ): Promise<void> {
    const answer = await this.send(keys, 'PUT', `/v1/calls/${encodeURIComponent(uuid)}`, body);
    if (answer.status >= 200 && answer.status < 300) return;
    if (goneIsOk && answer.status === 404) return;
    throw new CarrierApiError(`Vonage answered HTTP ${answer.status} to ${what}: ${errorOf(answer)}`, answer.status);
  }

  /** The bearer token for one request: the application's, signed with its private key. */
  private async token(keys: VonageKeys): Promise<string> {
    let key = this.keys.get(keys.privateKey);
    if (!key) {
      key = createPrivateKey(keys.privateKey);
      this.keys.set(keys.privateKey, key);
    }
    return applicationToken(keys.applicationId, key, this.o.clock.now(), (this.o.randomId ?? randomUUID)());
  }

  private async send(
    keys: VonageKeys,
    method: 'POST' | 'PUT',
    path: string,
    body: Record<string, unknown>,
  ): Promise<CarrierAnswer> {
    const authorization = `Bearer ${await this.token(keys)}`;
    return sendCarrierRequest(
      'Vonage',
      { method, url: `${this.o.apiBase}${path}`, headers: { authorization }, json: body },
      this.o.dispatcher,
    );
  }
}

/** The created call's uuid. */
function uuidOf(body: Record<string, unknown>): string | undefined {
  return typeof body.uuid === 'string' && body.uuid !== '' ? body.uuid : undefined;
}

/** Vonage's error answer, {type, title, detail}, as one line. */
function errorOf(answer: CarrierAnswer): string {
  const { title, detail } = answer.body;
  return [title, detail]
    .filter((part): part is string => typeof part === 'string')
    .join(': ')
    .slice(0, 300);
}
