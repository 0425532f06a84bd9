// A local stand-in for Twilio's REST API on 127.0.0.1: it answers Calls.json as Twilio does
// (201 with the call resource, 4xx with {code, message}), then plays the call's life back to
// the service as signed status callbacks and, for an answered call, opens the media stream
// the TwiML names, with its <Parameter>s, the way Twilio would (TwilioStreamCaller).
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TwilioStreamCaller } from '../../src/carriers/sim/twilio-stream.ts';
import { twilioSignature, type FormParams } from '../../src/telephony/twilio-signature.ts';

export type Behavior =
  | { kind: 'answer'; /** what the callee does once the stream is open */ talk?: (caller: TwilioStreamCaller) => Promise<void> }
  | { kind: 'no-answer' }
  | { kind: 'busy' }
  | { kind: 'failed' }
  | { kind: 'canceled' }
  | { kind: 'machine' }
  | { kind: 'refuse' }
  | { kind: 'server-error' };

export interface CreatedCall {
  sid: string;
  form: FormParams;
  /** Status callbacks sent, in order, with the service's answer. */
  callbacks: { status: string; answeredBy?: string; httpStatus: number }[];
  stream?: TwilioStreamCaller;
  done: Promise<void>;
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

export class TwilioStandIn {
  readonly accountSid = `AC${hex(16)}`;
  readonly authToken = hex(16);
  readonly calls: CreatedCall[] = [];
  readonly hangups: string[] = [];
  readonly behaviors = new Map<string, Behavior>();
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
    if (req.headers.authorization !== `Basic ${Buffer.from(`${this.accountSid}:${this.authToken}`).toString('base64')}`) {
      return reply(401, { code: 20003, message: 'Authenticate', status: 401 });
    }
    const base = `/2010-04-01/Accounts/${this.accountSid}/Calls`;
    if (req.method === 'POST' && req.url === `${base}.json`) return this.create(form, reply);
    const hangup = req.method === 'POST' && req.url?.startsWith(`${base}/`) ? req.url.slice(base.length + 1, -'.json'.length) : undefined;
    if (hangup && form.Status === 'completed') {
      this.hangups.push(hangup);
      const call = this.live.get(hangup);
      if (!call) return reply(404, { code: 20404, message: `The requested resource ${req.url} was not found`, status: 404 });
      void call.stream?.hangUp();
      return reply(200, { sid: hangup, status: 'completed' });
    }
    reply(404, { code: 20404, message: 'not found', status: 404 });
  }

  private create(form: FormParams, reply: (status: number, body: unknown) => void): void {
    const to = String(form.To);
    const behavior = this.behaviors.get(to) ?? { kind: 'no-answer' };
    if (behavior.kind === 'refuse') return reply(400, { code: 21211, message: `The 'To' number ${to} is not a valid phone number.`, status: 400 });
    if (behavior.kind === 'server-error') return reply(503, { code: 20500, message: 'Service unavailable', status: 503 });
    const sid = `CA${hex(16)}`;
    const call: CreatedCall = { sid, form, callbacks: [], done: Promise.resolve() };
    this.calls.push(call);
    this.live.set(sid, call);
    reply(201, {
      sid,
      account_sid: this.accountSid,
      to,
      from: form.From,
      status: 'queued',
      direction: 'outbound-api',
      api_version: '2010-04-01',
      date_created: new Date().toUTCString(),
      uri: `/2010-04-01/Accounts/${this.accountSid}/Calls/${sid}.json`,
    });
    call.done = this.play(call, behavior).finally(() => this.live.delete(sid));
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
        const twiml = String(call.form.Twiml);
        const url = /<Stream url="([^"]+)"/.exec(twiml)?.[1] ?? '';
        const customParameters: Record<string, string> = {};
        for (const m of twiml.matchAll(/<Parameter name="([^"]+)" value="([^"]*)"\/>/g)) customParameters[m[1]!] = m[2]!;
        const stream = new TwilioStreamCaller({ url, customParameters, accountSid: this.accountSid, callSid: call.sid });
        call.stream = stream;
        try {
          await stream.connect();
          await (behavior.talk ? behavior.talk(stream) : stream.waitForClose());
          await stream.hangUp();
        } catch {
          // No media endpoint answered: Twilio ends the call.
        }
        return void (await this.callback(call, 'completed'));
      }
    }
  }

  /** Sends one signed status callback the way Twilio does. */
  async callback(call: CreatedCall, status: string, answeredBy?: string): Promise<number> {
    const url = String(call.form.StatusCallback);
    const params: FormParams = {
      AccountSid: this.accountSid,
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
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(this.authToken, url, params) },
      body: new URLSearchParams(params as Record<string, string>).toString(),
    });
    await res.body?.cancel();
    call.callbacks.push({ status, ...(answeredBy ? { answeredBy } : {}), httpStatus: res.status });
    return res.status;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
