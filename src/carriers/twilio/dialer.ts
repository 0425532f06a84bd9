// Outbound calls through Twilio's REST API (docs/twilio.md): the call is created with inline
// TwiML that connects its audio to our /media/twilio stream, carrying call_id and the per-call
// secret as <Parameter>s (Twilio refuses query strings in a stream url). Progress comes back on
// the status callback, which names the call_id in its own query string. A call from a number of an
// organization's own Twilio account is placed through that account, and recorded with it, so its
// hang-up and transfers go through it too (accounts.ts); a number no account holds goes through the
// service-wide account, or, without one, on to the carriers after Twilio. SignalWire's LaML API has
// the same shapes: its dialer is this one with SignalWire's flavor (flavor.ts) and accounts, whose
// keys name their space's API (TwilioKeys.apiBase).
import { voicemailHandling } from '../../agents/schema.ts';
import type { Clock } from '../../clock.ts';
import {
  NoTransferError,
  type ConsultRequest,
  type DialRequest,
  type DialResult,
  type Dialer,
  type TransferRequest,
} from '../../records/dialer.ts';
import type { CarrierCallRepository } from '../carrier-calls.ts';
import { CarrierApiError } from '../carrier-rest.ts';
import type { TwilioAccountBook, TwilioKeys } from './accounts.ts';
import { statusPath, transferPath, TWILIO_FLAVOR, type TwilioFlavor } from './flavor.ts';
import { conferenceTwiml, connectStreamTwiml, dialTwiml } from './twiml.ts';

export interface TwilioDialerOptions {
  /** The service-wide account and the organizations' own. */
  accounts: TwilioAccountBook;
  /** Twilio's by default; a carrier with Twilio's REST API and markup (SignalWire) gives its own. */
  flavor?: TwilioFlavor;
  /** Where a call no Twilio account places goes (the carriers after this one). */
  next: Dialer;
  /** https://api.twilio.com, or a stand-in in tests; an account's own apiBase comes first. */
  apiBase: string;
  /** The service's public address, known only once it listens. */
  publicUrl: () => string;
  ringTimeoutMs: number;
  carrierCalls: CarrierCallRepository;
  clock: Clock;
  /** How requests are sent: the global fetch by default; one through the outbound layer (net/fetch.ts) when given. */
  fetch?: (url: string, init?: RequestInit) => Promise<Response>;
}

/** Thrown when Twilio could not be reached or failed on its side: the call ends with error_service. */
export class TwilioApiError extends CarrierApiError {
  override name = 'TwilioApiError';
}

export class TwilioDialer implements Dialer {
  readonly name: TwilioFlavor['name'];
  private readonly flavor: TwilioFlavor;

  /**
   * Through the service-wide account, yes. Without one a call goes through Twilio only from a number of the
   * organization's own account (already its number), and any other is the next carrier's to judge.
   */
  showsCallerId(to: string): boolean {
    return this.o.accounts.serviceWide !== undefined || this.o.next.showsCallerId(to);
  }
  private readonly fetch: (url: string, init?: RequestInit) => Promise<Response>;

  constructor(private readonly o: TwilioDialerOptions) {
    this.fetch = o.fetch ?? fetch;
    this.flavor = o.flavor ?? TWILIO_FLAVOR;
    this.name = this.flavor.name;
  }

  async dial(request: DialRequest): Promise<DialResult> {
    const from = request.presentationNumber ?? request.from;
    const route = await this.o.accounts.forOutbound(request.orgId, from);
    if (route.kind === 'other-carrier') {
      return {
        status: 'failed',
        reason: 'dial_failed',
        message: `${from} is on the organization's ${route.account.carrier} account ${JSON.stringify(route.account.name)}, and calls through ${route.account.carrier} are not placed yet; call from a number of a Twilio account.`,
      };
    }
    const keys = route.kind === 'account' ? route.keys : this.o.accounts.serviceWide;
    if (!keys) return this.o.next.dial(request);
    const form = this.streamedCallForm(
      request.callId,
      request.to,
      request.presentationNumber ?? request.from,
      request.streamSecret,
      '',
      ['initiated', 'ringing', 'answered', 'completed'],
    );
    // Twilio's own detection is one more input beside the service's, which hears the audio itself.
    if (voicemailHandling(request.agent.config)) form.set('MachineDetection', 'Enable');

    const res = await this.post(keys, `Calls.json`, form);
    const body = await this.json(res);
    if (res.status === 201 || res.status === 200) {
      const sid = typeof body.sid === 'string' ? body.sid : undefined;
      if (!sid)
        throw new TwilioApiError(`${this.flavor.label} accepted the call but its answer had no sid`, res.status);
      await this.o.carrierCalls.record(request.callId, this.name, sid, this.o.clock.now(), keys.carrierAccountId);
      return { status: 'dialing', carrierCallId: sid };
    }
    if (res.status >= 400 && res.status < 500 && res.status !== 401 && res.status !== 429) {
      // Twilio refused this call (bad or unreachable number, unverified caller id, …).
      const code = typeof body.code === 'number' ? ` (${this.flavor.label} error ${body.code})` : '';
      return {
        status: 'failed',
        reason: 'dial_failed',
        message: `${this.flavor.label} refused the call${code}: ${typeof body.message === 'string' ? body.message : `HTTP ${res.status}`}`,
      };
    }
    throw new TwilioApiError(
      `${this.flavor.label} answered HTTP ${res.status} to a call request: ${typeof body.message === 'string' ? body.message : ''}`,
      res.status,
    );
  }

  /**
   * POST Calls/{sid}.json Status=completed, through `keys`' account (the service-wide one by default); a call Twilio no
   * longer knows (404, code 20404) has ended already.
   */
  async hangUp(carrierCallId: string, keys = this.o.accounts.serviceWide): Promise<void> {
    if (!keys) throw new TwilioApiError(`no ${this.flavor.label} account to hang the call up through`, undefined);
    await this.updateCall(keys, carrierCallId, { Status: 'completed' }, 'a hang-up', true);
  }

  /** The keys of the account the call went through. */
  private async keysOf(callId: string): Promise<TwilioKeys> {
    const keys = await this.o.accounts.forCall(callId);
    if (!keys) throw new TwilioApiError(`no ${this.flavor.label} account is known for call ${callId}`, undefined);
    return keys;
  }

  /** Redirects the live call to a <Dial> of the destination: Twilio ends our media stream and dials it. */
  async transfer(request: TransferRequest): Promise<void> {
    const back = `${this.o.publicUrl()}${transferPath(this.flavor)}?call_id=${encodeURIComponent(request.callId)}`;
    const twiml = dialTwiml({
      to: request.to,
      callerId: request.from,
      timeoutS: Math.max(5, Math.round(this.o.ringTimeoutMs / 1000)),
      action: back,
      answered: `${back}&leg=answered`,
    });
    const keys = await this.o.accounts.forCall(request.callId);
    if (!keys) {
      if (this.o.next.transfer) return this.o.next.transfer(request);
      throw new NoTransferError(
        `no ${this.flavor.label} account is known for call ${request.callId} to redirect it through`,
      );
    }
    await this.updateCall(keys, request.carrierCallId, { Twiml: twiml }, 'a transfer');
  }

  /**
   * Places the warm transfer's second leg: its media comes to our stream like a placed call's; its progress to the
   * status callback, marked leg=consult.
   */
  async consult(request: ConsultRequest): Promise<{ carrierCallId: string }> {
    if (this.o.next.consult && !(await this.o.accounts.forCall(request.callId))) return this.o.next.consult(request);
    const form = this.streamedCallForm(request.callId, request.to, request.from, request.streamSecret, '&leg=consult', [
      'answered',
      'completed',
    ]);
    const res = await this.post(await this.keysOf(request.callId), 'Calls.json', form);
    const body = await this.json(res);
    if ((res.status === 201 || res.status === 200) && typeof body.sid === 'string') return { carrierCallId: body.sid };
    throw new TwilioApiError(
      `${this.flavor.label} answered HTTP ${res.status} to a transfer's call: ${typeof body.message === 'string' ? body.message : ''}`,
      res.status,
    );
  }

  /**
   * Moves both legs into one conference: Twilio ends our two media streams and connects the caller to the person who
   * answered.
   */
  async bridge(request: { callId: string; carrierCallId: string; consultCarrierCallId: string }): Promise<void> {
    if (this.o.next.bridge && !(await this.o.accounts.forCall(request.callId))) return this.o.next.bridge(request);
    const twiml = conferenceTwiml(`transfer-${request.callId}`);
    const keys = await this.keysOf(request.callId);
    for (const sid of [request.consultCarrierCallId, request.carrierCallId])
      await this.updateCall(keys, sid, { Twiml: twiml }, "a transfer's bridge");
  }

  /**
   * A new call whose audio Twilio streams to this service (call_id and `secret` as stream
   * parameters), its progress to the status callback (`callbackQuery` added to its address).
   */
  private streamedCallForm(
    callId: string,
    to: string,
    from: string | null,
    secret: string,
    callbackQuery: string,
    events: readonly string[],
  ): URLSearchParams {
    const publicUrl = this.o.publicUrl();
    const form = new URLSearchParams();
    form.set('To', to);
    if (from) form.set('From', from);
    form.set('Twiml', connectStreamTwiml(publicUrl, callId, secret, this.flavor));
    form.set('Timeout', String(Math.max(1, Math.round(this.o.ringTimeoutMs / 1000))));
    form.set(
      'StatusCallback',
      `${publicUrl}${statusPath(this.flavor)}?call_id=${encodeURIComponent(callId)}${callbackQuery}`,
    );
    form.set('StatusCallbackMethod', 'POST');
    for (const event of events) form.append('StatusCallbackEvent', event);
    return form;
  }

  /** POST Calls/{sid}.json: changes a live call; `goneIsOk`: a call Twilio no longer knows (404) has ended already. */
  private async updateCall(
    keys: TwilioKeys,
    sid: string,
    params: Record<string, string>,
    what: string,
    goneIsOk = false,
  ): Promise<void> {
    const res = await this.post(keys, `Calls/${encodeURIComponent(sid)}.json`, new URLSearchParams(params));
    if (res.ok || (goneIsOk && res.status === 404)) {
      await res.body?.cancel();
      return;
    }
    const body = await this.json(res);
    throw new TwilioApiError(
      `${this.flavor.label} answered HTTP ${res.status} to ${what}: ${typeof body.message === 'string' ? body.message : ''}`,
      res.status,
    );
  }

  async hangUpCall(callId: string): Promise<void> {
    // A call of no account here is the next carrier's (SignalWire's dialer sits in front of Twilio's).
    if (this.o.next.hangUpCall && !(await this.o.accounts.forCall(callId))) return this.o.next.hangUpCall(callId);
    const sid = await this.o.carrierCalls.carrierCallId(callId);
    if (sid) await this.hangUp(sid, await this.keysOf(callId));
  }

  /** A request of the account's: its SID in the path, its token for auth. */
  private async post(keys: TwilioKeys, resource: string, form: URLSearchParams): Promise<Response> {
    const url = `${keys.apiBase ?? this.o.apiBase}/2010-04-01/Accounts/${keys.accountSid}/${resource}`;
    try {
      return await this.fetch(url, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${keys.accountSid}:${keys.authToken}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: form.toString(),
        signal: AbortSignal.timeout(15_000),
      });
    } catch (error) {
      throw new TwilioApiError(`${this.flavor.label} could not be reached: ${(error as Error).message}`, undefined, {
        cause: error,
      });
    }
  }

  private async json(res: Response): Promise<Record<string, unknown>> {
    try {
      const parsed: unknown = await res.json();
      return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  }
}
