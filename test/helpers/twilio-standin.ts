// A local stand-in for Twilio's REST API on 127.0.0.1: it answers Calls.json as Twilio does
// (201 with the call resource, 4xx with {code, message}), then plays the call's life back to
// the service as signed status callbacks and, for an answered call, opens the media stream
// the TwiML names, with its <Parameter>s, the way Twilio would (TwilioStreamCaller). A live call
// updated with <Dial> TwiML (a cold transfer) loses its stream, its destination behaves as
// `behaviors` says (answer, busy, no-answer, failed), and the <Dial action>'s answer is followed:
// <Connect><Stream> opens the caller's stream back to the service. It holds several accounts
// (addAccount): each request is answered for the account its basic auth opens, under that
// account's SID in the path (GET Accounts/{sid}.json reads the account, as a credentials check
// does), and each call's callbacks are signed with the token of the account that placed it.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TwilioStreamCaller } from '../../src/carriers/sim/twilio-stream.ts';
import { twilioSignature, type FormParams } from '../../src/carriers/twilio/signature.ts';

export type Behavior =
  | {
      kind: 'answer';
      /** what the callee does once the stream is open */
      talk?: (caller: TwilioStreamCaller) => Promise<void>;
      /** what it does on the stream back after a transfer that failed */
      afterTransfer?: (caller: TwilioStreamCaller) => Promise<void>;
    }
  | { kind: 'no-answer' }
  | { kind: 'busy' }
  | { kind: 'failed' }
  | { kind: 'canceled' }
  | { kind: 'machine' }
  | { kind: 'refuse' }
  | { kind: 'server-error' };

export interface CreatedCall {
  sid: string;
  /** The account that placed it. */
  accountSid: string;
  form: FormParams;
  /** Status callbacks sent, in order, with the service's answer. */
  callbacks: { status: string; answeredBy?: string; httpStatus: number }[];
  stream?: TwilioStreamCaller;
  done: Promise<void>;
  /** Transfers asked for (TwiML <Dial>), with how each dial ended. */
  transfers: { to: string; dialStatus: string; twimlBack: string }[];
  /** The transfer under way, until the caller's stream back (if any) has ended. */
  redirect?: Promise<void>;
  /** The conference a warm transfer's bridge moved this call into. */
  conference?: string;
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

export class TwilioStandIn {
  readonly accountSid = `AC${hex(16)}`;
  readonly authToken = hex(16);
  readonly calls: CreatedCall[] = [];
  readonly hangups: string[] = [];
  readonly behaviors = new Map<string, Behavior>();
  /** Every account's auth token by SID, the first one's among them. */
  private readonly tokens = new Map<string, string>([[this.accountSid, this.authToken]]);
  /** How long a phone "rings" before the callback that ends the ringing. */
  ringMs = 30;
  url = '';
  private server: Server | undefined;
  private readonly live = new Map<string, CreatedCall>();

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** One more account on this stand-in (an organization's own): its SID and auth token. */
  addAccount(): { accountSid: string; authToken: string } {
    const account = { accountSid: `AC${hex(16)}`, authToken: hex(16) };
    this.tokens.set(account.accountSid, account.authToken);
    return account;
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.calls.map((c) => c.done));
    await new Promise((resolve) => this.server?.close(resolve));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const form: FormParams = {};
    for (const [k, v] of new URLSearchParams(raw)) {
      const existing = form[k];
      form[k] = existing === undefined ? v : Array.isArray(existing) ? [...existing, v] : [existing, v];
    }
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const [account = '', token] = Buffer.from(basic ?? '', 'base64')
      .toString()
      .split(':');
    if (token === undefined || this.tokens.get(account) !== token) {
      return reply(401, { code: 20003, message: 'Authenticate', status: 401 });
    }
    if (req.method === 'GET' && req.url === `/2010-04-01/Accounts/${account}.json`)
      return reply(200, { sid: account, friendly_name: 'stand-in', status: 'active', type: 'Full' });
    const base = `/2010-04-01/Accounts/${account}/Calls`;
    if (req.method === 'POST' && req.url === `${base}.json`) return this.create(account, form, reply);
    const hangup =
      req.method === 'POST' && req.url?.startsWith(`${base}/`)
        ? req.url.slice(base.length + 1, -'.json'.length)
        : undefined;
    if (hangup && typeof form.Twiml === 'string' && form.Twiml.includes('<Conference')) {
      // A warm transfer's bridge: the call leaves the service's stream for the conference.
      const call = this.liveOf(account, hangup);
      if (!call)
        return reply(404, { code: 20404, message: `The requested resource ${req.url} was not found`, status: 404 });
      call.conference = /<Conference[^>]*>([^<]+)<\/Conference>/.exec(form.Twiml)?.[1] ?? '';
      reply(200, { sid: hangup, status: 'in-progress' });
      void call.stream?.hangUp();
      return;
    }
    if (hangup && typeof form.Twiml === 'string' && form.Twiml.includes('<Dial')) {
      const call = this.liveOf(account, hangup);
      if (!call)
        return reply(404, { code: 20404, message: `The requested resource ${req.url} was not found`, status: 404 });
      reply(200, { sid: hangup, status: 'in-progress' });
      call.redirect = this.transfer(
        call,
        form.Twiml,
        this.behaviors.get(String(call.form.To)) ?? { kind: 'no-answer' },
      );
      return;
    }
    if (hangup && form.Status === 'completed') {
      this.hangups.push(hangup);
      const call = this.liveOf(account, hangup);
      if (!call)
        return reply(404, { code: 20404, message: `The requested resource ${req.url} was not found`, status: 404 });
      void call.stream?.hangUp();
      return reply(200, { sid: hangup, status: 'completed' });
    }
    reply(404, { code: 20404, message: 'not found', status: 404 });
  }

  /** A live call of that account: another account's call is not found, as on Twilio. */
  private liveOf(accountSid: string, sid: string): CreatedCall | undefined {
    const call = this.live.get(sid);
    return call?.accountSid === accountSid ? call : undefined;
  }

  private create(accountSid: string, form: FormParams, reply: (status: number, body: unknown) => void): void {
    const to = String(form.To);
    const behavior = this.behaviors.get(to) ?? { kind: 'no-answer' };
    if (behavior.kind === 'refuse')
      return reply(400, { code: 21211, message: `The 'To' number ${to} is not a valid phone number.`, status: 400 });
    if (behavior.kind === 'server-error')
      return reply(503, { code: 20500, message: 'Service unavailable', status: 503 });
    const sid = `CA${hex(16)}`;
    const call: CreatedCall = { sid, accountSid, form, callbacks: [], transfers: [], done: Promise.resolve() };
    this.calls.push(call);
    this.live.set(sid, call);
    reply(201, {
      sid,
      account_sid: accountSid,
      to,
      from: form.From,
      status: 'queued',
      direction: 'outbound-api',
      api_version: '2010-04-01',
      date_created: new Date().toUTCString(),
      uri: `/2010-04-01/Accounts/${accountSid}/Calls/${sid}.json`,
    });
    call.done = this.play(call, behavior).finally(() => this.live.delete(sid));
    // Played in the background: close() waits for it; a service already gone is not the test's failure.
    call.done.catch(() => undefined);
  }

  private async play(call: CreatedCall, behavior: Behavior): Promise<void> {
    const amd = call.form.MachineDetection !== undefined;
    await this.callback(call, 'initiated');
    await this.callback(call, 'ringing');
    await sleep(this.ringMs);
    switch (behavior.kind) {
      case 'no-answer':
      case 'busy':
      case 'failed':
      case 'canceled':
        return void (await this.callback(call, behavior.kind));
      case 'machine':
        await this.callback(call, 'in-progress', amd ? 'machine_start' : undefined);
        return void (await this.callback(call, 'completed', amd ? 'machine_start' : undefined));
      case 'answer': {
        await this.callback(call, 'in-progress', amd ? 'human' : undefined);
        await this.stream(call, String(call.form.Twiml), behavior.talk);
        // A transfer under way keeps the call until the caller's stream back is over.
        if (call.redirect) await call.redirect;
        return void (await this.callback(call, 'completed'));
      }
    }
  }

  /** Opens the stream `twiml` connects, and lets `talk` use it (else waits for the service to close it). */
  private async stream(
    call: CreatedCall,
    twiml: string,
    talk: ((caller: TwilioStreamCaller) => Promise<void>) | undefined,
  ): Promise<void> {
    const url = /<Stream url="([^"]+)"/.exec(twiml)?.[1] ?? '';
    const customParameters: Record<string, string> = {};
    for (const m of twiml.matchAll(/<Parameter name="([^"]+)" value="([^"]*)"\/>/g)) customParameters[m[1]!] = m[2]!;
    const stream = new TwilioStreamCaller({ url, customParameters, accountSid: call.accountSid, callSid: call.sid });
    call.stream = stream;
    try {
      await stream.connect();
      await (talk ? talk(stream) : stream.waitForClose());
      await stream.hangUp();
    } catch {
      // No media endpoint answered: Twilio ends the call.
    }
  }

  /** A cold transfer: the stream ends, the destination is dialled, and the <Dial action> says what happens next. */
  private async transfer(call: CreatedCall, twiml: string, behavior: Behavior): Promise<void> {
    const unescape = (s: string) => s.replaceAll('&amp;', '&').replaceAll('&quot;', '"');
    const action = unescape(/<Dial action="([^"]+)"/.exec(twiml)?.[1] ?? '');
    const number = /<Number[^>]*statusCallback="([^"]+)"[^>]*>([^<]+)<\/Number>/.exec(twiml);
    const answered = unescape(number?.[1] ?? '');
    const to = unescape(number?.[2] ?? '');
    await call.stream?.hangUp();
    await sleep(this.ringMs);
    const destination = this.behaviors.get(to) ?? { kind: 'no-answer' };
    const childSid = `CA${hex(16)}`;
    let dialStatus: string =
      destination.kind === 'busy' || destination.kind === 'failed' || destination.kind === 'no-answer'
        ? destination.kind
        : 'failed';
    if (destination.kind === 'answer') {
      await this.signedPost(call.accountSid, answered, {
        CallSid: childSid,
        ParentCallSid: call.sid,
        CallStatus: 'in-progress',
        To: to,
      });
      await sleep(this.ringMs);
      dialStatus = 'completed';
    }
    const twimlBack = await this.signedPost(call.accountSid, action, {
      CallSid: call.sid,
      DialCallSid: childSid,
      DialCallStatus: dialStatus,
      To: String(call.form.To),
    });
    call.transfers.push({ to, dialStatus, twimlBack });
    if (twimlBack.includes('<Connect><Stream'))
      await this.stream(call, twimlBack, behavior.kind === 'answer' ? behavior.afterTransfer : undefined);
  }

  /** A signed form POST to the service, as Twilio sends its webhooks; resolves with the answer's body. */
  private async signedPost(accountSid: string, url: string, params: FormParams): Promise<string> {
    const full: FormParams = { AccountSid: accountSid, ApiVersion: '2010-04-01', ...params };
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilioSignature(this.tokens.get(accountSid)!, url, full),
      },
      body: new URLSearchParams(full as Record<string, string>).toString(),
    });
    return res.text();
  }

  /** Sends one signed status callback the way Twilio does. */
  async callback(call: CreatedCall, status: string, answeredBy?: string): Promise<number> {
    const url = String(call.form.StatusCallback);
    const params: FormParams = {
      AccountSid: call.accountSid,
      ApiVersion: '2010-04-01',
      CallSid: call.sid,
      CallStatus: status,
      CallbackSource: 'call-progress-events',
      Direction: 'outbound-api',
      From: String(call.form.From),
      To: String(call.form.To),
      SequenceNumber: String(call.callbacks.length),
      Timestamp: new Date().toUTCString(),
      ...(status === 'completed' ? { CallDuration: '0' } : {}),
      ...(answeredBy ? { AnsweredBy: answeredBy } : {}),
    };
    // Twilio logs a callback the service did not answer (it stopped, say) and goes on: status 0 here.
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilioSignature(this.tokens.get(call.accountSid)!, url, params),
      },
      body: new URLSearchParams(params as Record<string, string>).toString(),
    }).catch(() => null);
    await res?.body?.cancel();
    const httpStatus = res?.status ?? 0;
    call.callbacks.push({ status, ...(answeredBy ? { answeredBy } : {}), httpStatus });
    return httpStatus;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
