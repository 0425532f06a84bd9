// A local stand-in for Telnyx on 127.0.0.1, speaking what src/carriers/telnyx/ relies on from
// Telnyx's documentation: its REST API (POST /v2/texml/calls/{connection_id} with inline TeXML,
// answered {call_sid, from, to, status}; the Call Control actions hangup, transfer, streaming_start
// and bridge on /v2/calls/{call_control_id}/actions/…; 401 without the account's bearer API
// key), its webhooks signed with a generated ed25519 key (telnyx-signature-ed25519 over
// `${telnyx-timestamp}|${body}`: TeXML's form-encoded voice webhook and status callbacks, Call
// Control's JSON events), and its media stream (TELNYX_DIALECT: connected, start with stream_id,
// call_control_id, media_format and custom_parameters, media with sequence_number and chunk, dtmf,
// mark echoes, stop), where every second media frame may arrive before the one ahead of it.
// A party in `g722Legs` is on a G.722 leg (a SIP or WebRTC phone): its stream carries G.722 at
// 16 kHz whatever the <Stream> asked, as Telnyx transcodes only between PCMU and PCMA; every other
// leg streams PCMU.
// A placed call plays its life back as `behaviors` say for the number called; a transfer ends the
// stream, and its destination answers (call.answered, call.bridged) or hangs up with a cause, after
// which the service's streaming_start brings the caller back. A bridge ({call_control_id} of another
// live call) joins the two calls: both streams stop, and each call names the other in `bridgedWith`.
import { generateKeyPairSync, randomBytes, randomUUID, sign, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LineFormat } from '../../src/audio/line-format.ts';
import { TwilioStreamCaller, type StreamDialect } from '../../src/carriers/sim/twilio-stream.ts';

/** Telnyx's media stream, in the words Telnyx documents, its start announcing `encoding` at `sample_rate`. */
export const telnyxDialect = (encoding: 'PCMU' | 'G722', sample_rate: 8000 | 16000): StreamDialect => ({
  connected: () => ({ event: 'connected', version: '1.0.0' }),
  start: (o) => ({
    event: 'start',
    sequence_number: String(o.sequence),
    start: {
      user_id: o.accountSid,
      call_control_id: o.callSid,
      client_state: null,
      media_format: { encoding, sample_rate, channels: 1 },
      custom_parameters: o.customParameters,
    },
    stream_id: o.streamSid,
  }),
  media: (o) =>
    `{"event":"media","sequence_number":"${o.sequence}","media":{"track":"inbound","chunk":"${o.chunk}","timestamp":"${o.timestampMs}","payload":"${o.payload}"},"stream_id":"${o.streamSid}"}`,
  dtmf: (o) => ({
    event: 'dtmf',
    sequence_number: String(o.sequence),
    stream_id: o.streamSid,
    occurred_at: new Date().toISOString(),
    dtmf: { digit: o.digit },
  }),
  stop: (o) => ({
    event: 'stop',
    sequence_number: String(o.sequence),
    stop: { user_id: o.accountSid, call_control_id: o.callSid },
    stream_id: o.streamSid,
  }),
  mark: (o) => ({ event: 'mark', sequence_number: String(o.sequence), stream_id: o.streamSid, mark: { name: o.name } }),
});

/** A phone network leg's stream: PCMU at 8 kHz. */
export const TELNYX_DIALECT = telnyxDialect('PCMU', 8000);
const G722_DIALECT = telnyxDialect('G722', 16000);
const G722_LINE: LineFormat = { codec: 'g722', rate: 16000 };

export type TelnyxBehavior =
  | {
      kind: 'answer';
      /** What the callee does once the stream is open. */
      talk?: (line: TwilioStreamCaller) => Promise<void>;
      /** What it does on the stream back after a transfer that failed. */
      afterTransfer?: (line: TwilioStreamCaller) => Promise<void>;
    }
  | { kind: 'busy' }
  | { kind: 'no-answer' }
  | { kind: 'failed' }
  | { kind: 'refuse' };

export interface TelnyxPlacedCall {
  callSid: string;
  /** The create request's JSON body. */
  body: Record<string, unknown>;
  /** The call_id the service gave the stream (its <Parameter>). */
  callId: string;
  callbacks: { status: string; httpStatus: number }[];
  stream?: TwilioStreamCaller;
  transfers: { to: string; outcome: string }[];
  done: Promise<void>;
  /** A transfer under way, until the caller's stream back (if any) has ended. */
  redirect?: Promise<void>;
  /** The caller's stream back after a failed transfer, until it has ended. */
  back?: Promise<void>;
  /** The call a bridge joined this one to (its callSid). */
  bridgedWith?: string;
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const unescapeXml = (s: string) =>
  s
    .replaceAll('&quot;', '"')
    .replaceAll('&apos;', "'")
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&');

/** The stream a TeXML <Connect><Stream> asks for: its url and <Parameter>s. */
export function streamOfTexml(texml: string): { url: string; parameters: Record<string, string> } | undefined {
  const url = /<Stream url="([^"]+)"/.exec(texml)?.[1];
  if (!url) return undefined;
  const parameters: Record<string, string> = {};
  for (const m of texml.matchAll(/<Parameter name="([^"]+)" value="([^"]*)"\/>/g))
    parameters[unescapeXml(m[1]!)] = unescapeXml(m[2]!);
  return { url: unescapeXml(url), parameters };
}

export class TelnyxStandIn {
  readonly apiKey = `KEY${hex(16)}`;
  readonly connectionId = String(BigInt(`0x${hex(7)}`));
  readonly publicKey: string;
  private readonly privateKey: KeyObject;
  readonly calls: TelnyxPlacedCall[] = [];
  readonly hangups: string[] = [];
  readonly behaviors = new Map<string, TelnyxBehavior>();
  /** Parties (a caller's From, a called To) whose leg speaks G.722. */
  readonly g722Legs = new Set<string>();
  /** Media frames leave in swapped pairs (Telnyx does not promise their order). */
  swapFramePairs = true;
  ringMs = 30;
  url = '';
  private server: Server | undefined;
  private readonly live = new Map<string, TelnyxPlacedCall>();

  constructor() {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    this.privateKey = privateKey;
    // The raw 32 bytes end the DER SubjectPublicKeyInfo: Telnyx shows the account's key as their base64.
    this.publicKey = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64');
  }

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

  /** The headers Telnyx signs a webhook body with; `key` another account's to sign it wrongly. */
  signatureHeaders(body: string, key: KeyObject = this.privateKey): Record<string, string> {
    const timestamp = String(Math.floor(Date.now() / 1000));
    return {
      'telnyx-timestamp': timestamp,
      'telnyx-signature-ed25519': sign(null, Buffer.from(`${timestamp}|${body}`), key).toString('base64'),
    };
  }

  /** A signed form POST, as TeXML webhooks come; resolves with the answer. */
  async postForm(url: string, params: Record<string, string>, key?: KeyObject): Promise<Response> {
    const body = new URLSearchParams(params).toString();
    return fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...this.signatureHeaders(body, key) },
      body,
    });
  }

  /** A signed JSON POST, as Call Control events come. */
  private async postJson(url: string, value: unknown): Promise<number> {
    const body = JSON.stringify(value);
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...this.signatureHeaders(body) },
      body,
    }).catch(() => null);
    await res?.body?.cancel();
    return res?.status ?? 0;
  }

  /** Opens the stream a TeXML document or streaming_start names, as a phone on the line of `party`. */
  line(url: string, parameters: Record<string, string>, callSid: string, party = ''): TwilioStreamCaller {
    const g722 = this.g722Legs.has(party);
    return new TwilioStreamCaller({
      url,
      customParameters: parameters,
      dialect: g722 ? G722_DIALECT : TELNYX_DIALECT,
      ...(g722 ? { line: G722_LINE } : {}),
      swapFramePairs: this.swapFramePairs,
      callSid,
      streamSid: randomUUID(),
      accountSid: randomUUID(),
    });
  }

  /**
   * An inbound call to `to`: the TeXML voice webhook, signed, then the stream its TeXML asks for. Throws with the
   * service's answer when it took no call.
   */
  async placeInboundCall(
    serviceUrl: string,
    to: string,
    from: string,
  ): Promise<{ caller: TwilioStreamCaller; callId: string; texml: string }> {
    const callSid = `v3:${hex(20)}`;
    const res = await this.postForm(`${serviceUrl}/telephony/telnyx/voice`, this.voiceParams(callSid, from, to));
    const texml = await res.text();
    const stream = streamOfTexml(texml);
    if (res.status !== 200 || !stream?.parameters.call_id)
      throw new Error(`voice webhook answered ${res.status}: ${texml}`);
    const caller = this.line(stream.url, stream.parameters, callSid, from);
    await caller.connect();
    return { caller, callId: stream.parameters.call_id, texml };
  }

  /** The voice webhook for `to`, signed with a key that is not the account's. */
  badlySignedVoiceWebhook(serviceUrl: string, to: string, from: string): Promise<Response> {
    return this.postForm(
      `${serviceUrl}/telephony/telnyx/voice`,
      this.voiceParams(`v3:${hex(20)}`, from, to),
      generateKeyPairSync('ed25519').privateKey,
    );
  }

  private voiceParams(callSid: string, from: string, to: string): Record<string, string> {
    return {
      AccountSid: randomUUID(),
      CallSid: callSid,
      CallSidLegacy: callSid,
      CallStatus: 'ringing',
      ConnectionId: this.connectionId,
      Direction: 'inbound',
      From: from,
      To: to,
    };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const error = (status: number, code: string, title: string, detail = title) =>
      reply(status, { errors: [{ code, title, detail }] });
    if (req.headers.authorization !== `Bearer ${this.apiKey}`)
      return error(401, '10009', 'Authentication failed', 'The API key is missing or invalid.');
    let body: Record<string, unknown>;
    try {
      body = raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>);
    } catch {
      return error(400, '10015', 'Bad Request', 'The request body is not valid JSON.');
    }
    const url = req.url ?? '';
    // The credentials check on create: the TeXML application whose id is the connection id.
    if (req.method === 'GET' && url.startsWith('/v2/texml_applications/'))
      return url === `/v2/texml_applications/${this.connectionId}`
        ? reply(200, { data: { id: this.connectionId, record_type: 'texml_application', active: true } })
        : error(404, '10005', 'Resource not found', 'No TeXML application has that id.');
    if (req.method === 'POST' && url === `/v2/texml/calls/${this.connectionId}`) return this.create(body, reply, error);
    if (req.method === 'POST' && url.startsWith('/v2/texml/calls/'))
      return error(404, '10005', 'Resource not found', 'No TeXML application has that connection id.');
    const action = /^\/v2\/calls\/([^/]+)\/actions\/([a-z_]+)$/.exec(url);
    if (req.method !== 'POST' || !action) return error(404, '10005', 'Resource not found');
    const callSid = decodeURIComponent(action[1]!);
    // Asked for even when the call has just ended on its own (Telnyx then answers 422).
    if (action[2] === 'hangup') this.hangups.push(callSid);
    const call = this.live.get(callSid);
    if (!call) return error(422, '90018', 'Call has already ended');
    const ok = () => reply(200, { data: { result: 'ok' } });
    switch (action[2]) {
      case 'hangup':
        ok();
        return void (await call.stream?.hangUp());
      case 'transfer':
        ok();
        call.redirect = this.transfer(call, body);
        return;
      case 'streaming_start':
        ok();
        return void (await this.streamBack(call, body));
      case 'bridge': {
        const other = this.live.get(String(body.call_control_id ?? ''));
        if (!other || other === call) return error(422, '90018', 'Call has already ended');
        ok();
        // The two calls hear each other now: neither streams to the service any more.
        call.bridgedWith = other.callSid;
        other.bridgedWith = call.callSid;
        return void (await Promise.all([call.stream?.hangUp(), other.stream?.hangUp()]));
      }
      default:
        return error(404, '10005', 'Resource not found');
    }
  }

  private create(
    body: Record<string, unknown>,
    reply: (status: number, body: unknown) => void,
    error: (status: number, code: string, title: string, detail?: string) => void,
  ): void {
    const to = String(body.To ?? '');
    const behavior = this.behaviors.get(to) ?? { kind: 'no-answer' };
    if (typeof body.From !== 'string' || typeof body.Texml !== 'string')
      return error(422, '10032', 'Invalid parameter', 'From and To are required, with Texml or Url.');
    if (behavior.kind === 'refuse') return error(422, '90034', 'Invalid destination', `${to} cannot be called.`);
    const callSid = `v3:${hex(20)}`;
    const stream = streamOfTexml(body.Texml);
    const call: TelnyxPlacedCall = {
      callSid,
      body,
      callId: stream?.parameters.call_id ?? '',
      callbacks: [],
      transfers: [],
      done: Promise.resolve(),
    };
    this.calls.push(call);
    this.live.set(callSid, call);
    reply(200, { call_sid: callSid, from: body.From, to, status: 'queued' });
    call.done = this.play(call, behavior).finally(() => this.live.delete(callSid));
    // Played in the background: close() waits for it; a service already gone is not the test's failure.
    call.done.catch(() => undefined);
  }

  private async play(call: TelnyxPlacedCall, behavior: TelnyxBehavior): Promise<void> {
    await this.callback(call, 'initiated');
    await this.callback(call, 'ringing');
    await sleep(this.ringMs);
    if (behavior.kind !== 'answer') return void (await this.callback(call, behavior.kind));
    await this.callback(call, 'in-progress');
    const stream = streamOfTexml(String(call.body.Texml));
    if (stream)
      await this.onLine(
        call,
        this.line(stream.url, stream.parameters, call.callSid, String(call.body.To)),
        behavior.talk,
      );
    // A transfer under way keeps the call until the caller's stream back is over.
    if (call.redirect) await call.redirect;
    await this.callback(call, 'completed');
  }

  private async onLine(
    call: TelnyxPlacedCall,
    line: TwilioStreamCaller,
    talk: ((line: TwilioStreamCaller) => Promise<void>) | undefined,
  ): Promise<void> {
    call.stream = line;
    try {
      await line.connect();
      await (talk ? talk(line) : line.waitForClose());
      await line.hangUp();
    } catch {
      // No media endpoint answered: Telnyx ends the call.
    }
  }

  /** A cold transfer: the stream stops, the destination rings, and its events go to webhook_url. */
  private async transfer(call: TelnyxPlacedCall, body: Record<string, unknown>): Promise<void> {
    const to = String(body.to ?? '');
    const webhookUrl = String(body.webhook_url ?? '');
    await call.stream?.hangUp();
    const leg = `v3:${hex(20)}`;
    const event = (type: string, payload: Record<string, unknown> = {}) => ({
      data: {
        event_type: type,
        id: randomUUID(),
        occurred_at: new Date().toISOString(),
        payload: { call_control_id: leg, connection_id: this.connectionId, from: body.from, to, ...payload },
        record_type: 'event',
      },
      meta: { attempt: 1, delivered_to: webhookUrl },
    });
    await this.postJson(webhookUrl, event('call.initiated'));
    await sleep(this.ringMs);
    const destination = this.behaviors.get(to) ?? { kind: 'no-answer' };
    if (destination.kind === 'answer') {
      await this.postJson(webhookUrl, event('call.answered'));
      await this.postJson(webhookUrl, event('call.bridged'));
      call.transfers.push({ to, outcome: 'answered' });
      return;
    }
    const cause =
      destination.kind === 'busy' ? 'user_busy' : destination.kind === 'no-answer' ? 'timeout' : 'call_rejected';
    call.transfers.push({ to, outcome: cause });
    await this.postJson(webhookUrl, event('call.hangup', { hangup_cause: cause, hangup_source: 'callee' }));
    // The service streams the caller back (streaming_start); that stream's life is the call's.
    if (call.back) await call.back;
  }

  /** streaming_start: the caller of a failed transfer comes back on a new stream. */
  private async streamBack(call: TelnyxPlacedCall, body: Record<string, unknown>): Promise<void> {
    const parameters: Record<string, string> = {};
    for (const p of Array.isArray(body.custom_parameters) ? body.custom_parameters : []) {
      const { name, value } = p as { name?: unknown; value?: unknown };
      if (typeof name === 'string' && typeof value === 'string') parameters[name] = value;
    }
    const behavior = this.behaviors.get(String(call.body.To));
    const talk = behavior?.kind === 'answer' ? behavior.afterTransfer : undefined;
    const line = this.line(String(body.stream_url ?? ''), parameters, call.callSid, String(call.body.To));
    call.back = this.onLine(call, line, talk);
  }

  /** One signed status callback, as the TeXML call's StatusCallback hears it. */
  private async callback(call: TelnyxPlacedCall, status: string): Promise<void> {
    const url = String(call.body.StatusCallback ?? '');
    if (!url) return;
    const res = await this.postForm(url, {
      AccountSid: randomUUID(),
      CallSid: call.callSid,
      CallSidLegacy: call.callSid,
      CallStatus: status,
      CallbackSource: 'call-progress-events',
      ConnectionId: this.connectionId,
      Direction: 'outbound-api',
      From: String(call.body.From),
      To: String(call.body.To),
      SequenceNumber: String(call.callbacks.length),
      Timestamp: new Date().toISOString(),
    }).catch(() => null);
    await res?.body?.cancel();
    call.callbacks.push({ status, httpStatus: res?.status ?? 0 });
  }
}
