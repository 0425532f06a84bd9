// Outbound calls, hang-up, cold and warm transfer through Telnyx's REST API (TELNYX_API_BASE,
// https://api.telnyx.com by default), sent with Telnyx's SDK through the outbound layer (rest.ts)
// with the account's API key as a bearer token. The requests relied on, as Telnyx documents them:
//
//   POST /v2/texml/calls/{connection_id}   JSON {From, To, Texml (inline instructions), …}
//        → {call_sid (the call_control_id), from, to, status: "queued"} (flat, no data wrapper).
//        The TeXML call parameters StatusCallback, StatusCallbackMethod, StatusCallbackEvent,
//        Timeout and MachineDetection ride along; progress comes back to StatusCallback as a
//        signed form (CallSid, CallStatus initiated|ringing|in-progress|completed|busy|no-answer|
//        failed|canceled, AnsweredBy) — or to the TeXML application's own status callback.
//   POST /v2/calls/{call_control_id}/actions/hangup            JSON {}
//   POST /v2/calls/{call_control_id}/actions/transfer          JSON {to, from, timeout_secs, webhook_url}
//        → the call leaves our stream; the new leg's events (call.initiated, call.bridged,
//          call.answered or call.hangup with hangup_cause) go to webhook_url (status-webhooks.ts).
//   POST /v2/calls/{call_control_id}/actions/streaming_start   JSON {stream_url, stream_track,
//        stream_bidirectional_mode: "rtp", stream_bidirectional_codec: "PCMU",
//        custom_parameters: [{name, value}]}
//   POST /v2/calls/{call_control_id}/actions/bridge            JSON {call_control_id (the other call)}
//        → {data: {result: "ok"}}; both calls then hear call.bridged, and their audio is each other's.
//   errors: 4xx {errors: [{code, title, detail}]}; 404/422 on a call that has ended.
//
// A warm transfer's second leg (consult) is one more TeXML call, to the destination, whose inline
// TeXML streams to /media/telnyx like a placed call's, with the call's call_id and a secret made for
// that leg (the media route takes a live call's second stream through the transfer's secret), and
// whose StatusCallback is marked leg=consult (status-webhooks.ts: a busy or unanswered leg ends the
// hold; its completion is not the call's). The bridge is Call Control's own: the caller's leg is
// bridged with the second leg's call_control_id, and both streams to us end (checked against the
// tests' stand-in; docs/carriers/telnyx.md says what a live account has yet to confirm). Chosen over
// updating both calls' TeXML to one <Dial><Conference> (Twilio's way, dialer.ts of twilio/) because
// that update is addressed by /v2/texml/Accounts/{account_sid}/Calls/{call_sid}, and an account here
// holds no account_sid; the bridge needs only the two call_control_ids we already hold, in one request.
//
// A TeXML call's CallSid is its call_control_id, so the Call Control actions take the id the
// create answered and the stream's start names. Like Twilio's, the stream TeXML goes inline with
// the call, its secret as a <Parameter>. Telnyx is reached only through an organization's own
// account: a call from a number no Telnyx account of the organization holds goes on to the
// carriers after Telnyx.
import { voicemailHandling } from '../../agents/schema.ts';
import type { Clock } from '../../clock.ts';
import type { Dispatcher } from '../../net/http.ts';
import { CarrierApiError, placeCarrierCall, type CarrierAnswer } from '../carrier-rest.ts';
import {
  NoTransferError,
  type ConsultRequest,
  type DialRequest,
  type DialResult,
  type Dialer,
  type TransferRequest,
} from '../../records/dialer.ts';
import type { CarrierCallRepository } from '../carrier-calls.ts';
import type { TelnyxAccounts } from './accounts.ts';
import { telnyxAnswer, telnyxClients, type TexmlCallParams, type TransferParams } from './rest.ts';
import { connectStreamTexml, streamCodecFor, telnyxMediaUrl } from './texml.ts';

export interface TelnyxDialerOptions {
  accounts: TelnyxAccounts;
  /** Where a call no Telnyx account places goes (the carriers after this one). */
  next: Dialer;
  /** TELNYX_API_BASE, without a trailing slash. */
  apiBase: string;
  dispatcher: Dispatcher;
  /** The service's public address, known only once it listens. */
  publicUrl: () => string;
  ringTimeoutMs: number;
  carrierCalls: CarrierCallRepository;
  clock: Clock;
}

export const STATUS_CALLBACK_PATH = '/telephony/telnyx/status';
/** Where a cold transfer's new leg reports (Call Control events). */
export const TRANSFER_CALLBACK_PATH = '/telephony/telnyx/transfer';

export class TelnyxDialer implements Dialer {
  readonly name = 'telnyx';

  /** The SDK's client for an account's key, sending through the outbound layer. */
  private readonly client: ReturnType<typeof telnyxClients>;

  constructor(private readonly o: TelnyxDialerOptions) {
    this.client = telnyxClients({ apiBase: o.apiBase, dispatcher: o.dispatcher });
  }

  /** A Telnyx call goes only from a number of the organization's own account: others are the next carrier's. */
  showsCallerId(to: string): boolean {
    return this.o.next.showsCallerId(to);
  }

  async dial(request: DialRequest): Promise<DialResult> {
    const from = request.presentationNumber ?? request.from;
    const keys = await this.o.accounts.forOutbound(request.orgId, from);
    if (!keys) return this.o.next.dial(request);
    const publicUrl = this.o.publicUrl();
    const callId = encodeURIComponent(request.callId);
    const body: TexmlCallParams = {
      To: request.to,
      From: from,
      Texml: connectStreamTexml(publicUrl, request.callId, request.streamSecret, streamCodecFor(request.to)),
      StatusCallback: `${publicUrl}${STATUS_CALLBACK_PATH}?call_id=${callId}`,
      StatusCallbackMethod: 'POST',
      StatusCallbackEvent: 'initiated ringing answered completed',
      Timeout: Math.max(1, Math.round(this.o.ringTimeoutMs / 1000)),
    };
    // Telnyx's own detection is one more input beside the service's, which hears the audio itself.
    if (voicemailHandling(request.agent.config)) body.MachineDetection = 'Enable';
    return placeCarrierCall({
      carrier: 'Telnyx',
      dialer: this.name,
      callId: request.callId,
      carrierAccountId: keys.carrierAccountId,
      carrierCalls: this.o.carrierCalls,
      clock: this.o.clock,
      send: () => telnyxAnswer(this.client(keys.apiKey).texml.calls.create(keys.connectionId, body)),
      idOf: callSidOf,
      idName: 'call_sid',
      errorOf,
    });
  }

  async hangUpCall(callId: string): Promise<void> {
    const keys = await this.o.accounts.forCall(callId);
    if (!keys) return this.o.next.hangUpCall?.(callId);
    const sid = await this.o.carrierCalls.carrierCallId(callId);
    if (sid) await this.action(() => this.client(keys.apiKey).calls.actions.hangup(sid, {}), 'a hang-up', true);
  }

  /** Moves the live call to `to`: Telnyx ends our stream and dials it; how it went comes to the transfer callback. */
  async transfer(request: TransferRequest): Promise<void> {
    const keys = await this.o.accounts.forCall(request.callId);
    if (!keys) {
      if (this.o.next.transfer) return this.o.next.transfer(request);
      throw new NoTransferError(`no carrier account is known for call ${request.callId} to transfer it through`);
    }
    const body: TransferParams = {
      to: request.to,
      timeout_secs: Math.max(5, Math.round(this.o.ringTimeoutMs / 1000)),
      webhook_url: `${this.o.publicUrl()}${TRANSFER_CALLBACK_PATH}?call_id=${encodeURIComponent(request.callId)}`,
    };
    if (request.from) body.from = request.from;
    await this.action(() => this.client(keys.apiKey).calls.actions.transfer(request.carrierCallId, body), 'a transfer');
  }

  /** The caller whose transfer failed comes back to the agent on a new stream, which presents `secret`. */
  async restream(callId: string, secret: string): Promise<void> {
    const keys = await this.o.accounts.forCall(callId);
    const sid = await this.o.carrierCalls.carrierCallId(callId);
    if (!keys || !sid)
      throw new CarrierApiError(`no Telnyx call is known for call ${callId} to stream back`, undefined);
    await this.action(
      () =>
        this.client(keys.apiKey).calls.actions.startStreaming(sid, {
          stream_url: telnyxMediaUrl(this.o.publicUrl()),
          stream_track: 'inbound_track',
          stream_bidirectional_mode: 'rtp',
          stream_bidirectional_codec: 'PCMU',
          custom_parameters: [
            { name: 'call_id', value: callId },
            { name: 'secret', value: secret },
          ],
        }),
      "a failed transfer's stream back",
    );
  }

  /**
   * Places the warm transfer's second leg through the call's account: a TeXML call to `to` whose media comes to our
   * stream with the leg's secret, its progress to the status callback marked leg=consult.
   */
  async consult(request: ConsultRequest): Promise<{ carrierCallId: string }> {
    const keys = await this.o.accounts.forCall(request.callId);
    if (!keys) {
      if (this.o.next.consult) return this.o.next.consult(request);
      throw new NoTransferError(`no carrier account is known for call ${request.callId} to transfer it through`);
    }
    if (!request.from)
      throw new CarrierApiError(
        `call ${request.callId} has no number of its own to call the destination from`,
        undefined,
      );
    const publicUrl = this.o.publicUrl();
    const body: TexmlCallParams = {
      To: request.to,
      From: request.from,
      Texml: connectStreamTexml(publicUrl, request.callId, request.streamSecret, streamCodecFor(request.to)),
      StatusCallback: `${publicUrl}${STATUS_CALLBACK_PATH}?call_id=${encodeURIComponent(request.callId)}&leg=consult`,
      StatusCallbackMethod: 'POST',
      StatusCallbackEvent: 'answered completed',
      Timeout: Math.max(1, Math.round(this.o.ringTimeoutMs / 1000)),
    };
    const answer = await telnyxAnswer(this.client(keys.apiKey).texml.calls.create(keys.connectionId, body));
    const sid = answer.status >= 200 && answer.status < 300 ? callSidOf(answer.body) : undefined;
    if (sid) return { carrierCallId: sid };
    throw new CarrierApiError(
      `Telnyx answered HTTP ${answer.status} to a transfer's call${answer.status < 300 ? ' with no call_sid' : ''}: ${errorOf(answer)}`,
      answer.status,
    );
  }

  /** Bridges the caller's leg with the second leg (Call Control's bridge): Telnyx takes both off our streams. */
  async bridge(request: { callId: string; carrierCallId: string; consultCarrierCallId: string }): Promise<void> {
    const keys = await this.o.accounts.forCall(request.callId);
    if (!keys) {
      if (this.o.next.bridge) return this.o.next.bridge(request);
      throw new NoTransferError(`no carrier account is known for call ${request.callId} to bridge it through`);
    }
    await this.action(
      () =>
        this.client(keys.apiKey).calls.actions.bridge(request.carrierCallId, {
          call_control_id_to_bridge_with: request.consultCarrierCallId,
        }),
      "a transfer's bridge",
    );
  }

  /**
   * A Call Control action (POST /v2/calls/{id}/actions/…) sent through the SDK; `goneIsOk`: a call Telnyx no longer
   * knows (404, 422) has ended already.
   */
  private async action(send: () => Parameters<typeof telnyxAnswer>[0], what: string, goneIsOk = false): Promise<void> {
    const answer = await telnyxAnswer(send());
    if (answer.status >= 200 && answer.status < 300) return;
    if (goneIsOk && (answer.status === 404 || answer.status === 422)) return;
    throw new CarrierApiError(`Telnyx answered HTTP ${answer.status} to ${what}: ${errorOf(answer)}`, answer.status);
  }
}

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** The placed call's call_sid: flat in the answer (an older answer wrapped it in data). */
function callSidOf(body: Record<string, unknown>): string | undefined {
  for (const holder of [body, isRecord(body.data) ? body.data : {}]) {
    const value = holder.call_sid;
    if (typeof value === 'string' && value !== '') return value;
  }
  return undefined;
}

/** Telnyx's errors: [{code, title, detail}], as one line. */
function errorOf(answer: CarrierAnswer): string {
  const errors = answer.body.errors;
  if (!Array.isArray(errors)) return '';
  return errors
    .filter(isRecord)
    .map((e) =>
      [e.code, e.title, e.detail].filter((part) => typeof part === 'string' || typeof part === 'number').join(' '),
    )
    .join('; ')
    .slice(0, 300);
}
