// A local stand-in for Plivo on 127.0.0.1, speaking what src/carriers/plivo/ relies on from
// Plivo's documentation: its REST API (POST /v1/Account/{auth_id}/Call/ answered 201 {message:
// "call fired", request_uuid, api_id}; DELETE …/Call/{call_uuid}/ and …/Request/{request_uuid}/;
// POST …/Call/{call_uuid}/ {legs: "aleg", aleg_url} answered 202; 401 without HTTP basic auth
// auth_id:auth_token), its requests to the service signed X-Plivo-Signature-V3 with a fresh
// X-Plivo-Signature-V3-Nonce each (answer URL, ring and hangup callbacks, a transfer's aleg_url and
// its <Dial>'s callbackUrl and action), and its audio stream: start (callId, streamId, mediaFormat
// as the <Stream>'s contentType asked, L16 16 kHz by default), media (base64 little-endian L16,
// numeric sequenceNumber and chunk), dtmf; playAudio, checkpoint and clearAudio taken, checkpoints
// answered playedStream once the audio before them played, clearAudio answered clearedAudio (and
// the checkpoints it dropped never answered). The stream ends by its socket closing. A call the
// Transfer request moves to an aleg_url answering <Conference> leaves its stream and is recorded in
// that room (a warm transfer's bridge); its answer URL names ALegRequestUUID and RequestUUID.
// The phone on each line is a Twilio-stream phone (carriers/sim/twilio-stream.ts, μ-law 8 kHz, so
// the simulated callee runs its scripts on it unchanged); the stand-in carries its audio between
// that and Plivo's stream, resampled, as Plivo's media servers sit between a phone and the stream.
import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { muLawDecode, muLawEncode } from '../../src/audio/g711.ts';
import { Resampler } from '../../src/audio/resampler.ts';
import { TwilioStreamCaller } from '../../src/carriers/sim/twilio-stream.ts';
import { plivoSignatureV3 } from '../../src/carriers/plivo/signature.ts';

export type PlivoBehavior =
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

export interface PlivoPlacedCall {
  requestUuid: string;
  callUuid: string;
  /** The create request's JSON body. */
  body: Record<string, unknown>;
  /** The call_id of the service's answer_url. */
  callId: string;
  callbacks: { status: string; httpStatus: number }[];
  line?: PlivoLine;
  transfers: { to: string; outcome: string }[];
  /** The <Conference> room a Transfer request moved the call into. */
  conference?: string;
  done: Promise<void>;
  redirect?: Promise<void>;
}

/** A <Stream> of Plivo XML: its address and attributes. */
export interface PlivoStreamXml {
  url: string;
  attributes: Record<string, string>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const unescapeXml = (s: string) =>
  s
    .replaceAll('&quot;', '"')
    .replaceAll('&apos;', "'")
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&');
const attributesOf = (text: string): Record<string, string> =>
  Object.fromEntries([...text.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, unescapeXml(m[2]!)]));
const digits = (number: string) => number.replace(/^\+/, '');

export function streamOfXml(xml: string): PlivoStreamXml | undefined {
  const m = /<Stream([^>]*)>([^<]+)<\/Stream>/.exec(xml);
  return m ? { url: unescapeXml(m[2]!.trim()), attributes: attributesOf(m[1]!) } : undefined;
}

export function dialOfXml(xml: string): { attributes: Record<string, string>; number: string } | undefined {
  const m = /<Dial([^>]*)><Number>([^<]+)<\/Number><\/Dial>/.exec(xml);
  return m ? { attributes: attributesOf(m[1]!), number: unescapeXml(m[2]!) } : undefined;
}

/** The line format a contentType asks for: L16 rates, μ-law 8 kHz. */
function formatOf(contentType: string | undefined): { encoding: string; sampleRate: number } {
  const [encoding, rate] = (contentType ?? 'audio/x-l16;rate=8000').split(';rate=');
  return { encoding: encoding!, sampleRate: Number(rate ?? 8000) };
}

/**
 * One call's stream: the phone (a Twilio-stream phone on the stand-in's /phone socket) on one side, the service's
 * Plivo stream on the other.
 */
export class PlivoLine {
  readonly phone: TwilioStreamCaller;
  readonly streamId = randomUUID();
  /** Plivo messages the service sent that Plivo does not take, or took wrongly. */
  readonly protocolErrors: string[] = [];
  /** Every message the service sent, parsed. */
  readonly fromService: Record<string, unknown>[] = [];
  service: WebSocket | undefined;
  private phoneSocket: WebSocket | undefined;
  private sequence = 0;
  private chunk = 0;
  private readonly up: Resampler;
  private readonly down: Resampler;
  private readonly outstanding = new Set<string>();
  private readonly dropped = new Set<string>();
  private readonly format: { encoding: string; sampleRate: number };

  constructor(
    readonly stream: PlivoStreamXml,
    readonly callUuid: string,
    readonly authId: string,
    phoneUrl: string,
  ) {
    this.format = formatOf(stream.attributes.contentType);
    this.up = new Resampler(8000, this.format.sampleRate);
    this.down = new Resampler(this.format.sampleRate, 8000);
    this.phone = new TwilioStreamCaller({ url: phoneUrl, customParameters: {} });
  }

  /** The stand-in's side of the phone's socket. */
  attachPhone(socket: WebSocket): void {
    this.phoneSocket = socket;
    const service = new WebSocket(this.stream.url);
    this.service = service;
    const waiting: string[] = [];
    service.on('open', () => {
      for (const text of waiting.splice(0)) service.send(text);
    });
    service.on('message', (data) => this.fromServiceText(data.toString()));
    service.on('close', () => {
      if (socket.readyState === WebSocket.OPEN) socket.close(1000, 'stream ended');
    });
    service.on('error', () => socket.close(1011, 'stream failed'));
    socket.on('message', (data) => {
      const text = this.fromPhone(data.toString());
      if (text === undefined) return;
      if (service.readyState === WebSocket.OPEN) service.send(text);
      else if (service.readyState === WebSocket.CONNECTING) waiting.push(text);
    });
    socket.on('close', () => this.endStream());
  }

  /** Plivo leaves the stream (a transfer, a hang-up): the socket closes, and so does the phone's line. */
  endStream(): void {
    if (this.service && this.service.readyState <= WebSocket.OPEN) this.service.close(1000, 'stream ended');
    if (this.phoneSocket?.readyState === WebSocket.OPEN) this.phoneSocket.close(1000, 'call ended');
  }

  /** The phone's Twilio words, as Plivo's stream says them; undefined for nothing to send. */
  private fromPhone(text: string): string | undefined {
    const m = JSON.parse(text) as Record<string, unknown>;
    const head = { sequenceNumber: ++this.sequence, streamId: this.streamId };
    switch (m.event) {
      case 'start':
        return JSON.stringify({
          event: 'start',
          sequenceNumber: head.sequenceNumber,
          start: {
            callId: this.callUuid,
            streamId: this.streamId,
            accountId: this.authId,
            tracks: ['inbound'],
            mediaFormat: this.format,
          },
          extra_headers: '',
        });
      case 'media': {
        const mulaw = Buffer.from((m.media as { payload: string }).payload, 'base64');
        return JSON.stringify({
          event: 'media',
          ...head,
          media: {
            track: 'inbound',
            timestamp: String(Date.now()),
            chunk: ++this.chunk,
            payload: this.encode(muLawDecode(mulaw)).toString('base64'),
          },
          extra_headers: '',
        });
      }
      case 'dtmf':
        return JSON.stringify({
          event: 'dtmf',
          ...head,
          dtmf: { track: 'inbound', digit: (m.dtmf as { digit: string }).digit },
        });
      case 'mark': {
        const name = (m.mark as { name: string }).name;
        this.outstanding.delete(name);
        // A checkpoint whose audio a clearAudio dropped is never answered.
        if (this.dropped.delete(name)) return undefined;
        return JSON.stringify({ event: 'playedStream', ...head, name });
      }
      default:
        // connected and stop: Plivo's stream has no such message; its end is the socket closing.
        return undefined;
    }
  }

  private fromServiceText(text: string): void {
    let m: Record<string, unknown>;
    try {
      m = JSON.parse(text) as Record<string, unknown>;
    } catch {
      this.protocolErrors.push(`not JSON: ${text.slice(0, 80)}`);
      return;
    }
    this.fromService.push(m);
    const toPhone = (message: unknown) => {
      if (this.phoneSocket?.readyState === WebSocket.OPEN) this.phoneSocket.send(JSON.stringify(message));
    };
    if (m.event === 'playAudio') {
      const media = m.media as { contentType?: string; sampleRate?: number | string; payload?: string } | undefined;
      if (media?.contentType !== this.format.encoding || Number(media.sampleRate) !== this.format.sampleRate)
        this.protocolErrors.push(
          `playAudio of ${media?.contentType} at ${media?.sampleRate} on a ${this.format.encoding} stream`,
        );
      const pcm = this.decode(Buffer.from(media?.payload ?? '', 'base64'));
      toPhone({ event: 'media', media: { payload: Buffer.from(muLawEncode(this.down.push(pcm))).toString('base64') } });
    } else if (m.event === 'checkpoint' && typeof m.name === 'string') {
      this.outstanding.add(m.name);
      toPhone({ event: 'mark', mark: { name: m.name } });
    } else if (m.event === 'clearAudio') {
      for (const name of this.outstanding) this.dropped.add(name);
      toPhone({ event: 'clear' });
      this.service?.send(
        JSON.stringify({ event: 'clearedAudio', sequenceNumber: ++this.sequence, streamId: this.streamId }),
      );
    } else this.protocolErrors.push(`not a message Plivo takes: ${text.slice(0, 80)}`);
  }

  /** 8 kHz PCM from the phone onto the stream, in its format. */
  private encode(pcm8k: Int16Array): Buffer {
    if (this.format.encoding === 'audio/x-mulaw') return Buffer.from(muLawEncode(pcm8k));
    const samples = this.up.push(pcm8k);
    const bytes = Buffer.alloc(samples.length * 2);
    for (let i = 0; i < samples.length; i++) bytes.writeInt16LE(samples[i]!, i * 2);
    return bytes;
  }

  private decode(bytes: Buffer): Int16Array {
    if (this.format.encoding === 'audio/x-mulaw') return muLawDecode(bytes);
    const samples = new Int16Array(bytes.length >> 1);
    for (let i = 0; i < samples.length; i++) samples[i] = bytes.readInt16LE(i * 2);
    return samples;
  }
}

export class PlivoStandIn {
  readonly authId = `MA${randomUUID().replace(/-/g, '').slice(0, 18).toUpperCase()}`;
  readonly authToken = randomUUID().replace(/-/g, '');
  readonly calls: PlivoPlacedCall[] = [];
  /** Call or request uuids the service asked to hang up (DELETE), whether or not the call was still up. */
  readonly hangups: string[] = [];
  readonly lines: PlivoLine[] = [];
  readonly behaviors = new Map<string, PlivoBehavior>();
  ringMs = 30;
  url = '';
  private server: Server | undefined;
  private phones: WebSocketServer | undefined;
  private readonly live = new Map<string, PlivoPlacedCall>();
  private readonly waitingLines = new Map<string, PlivoLine>();

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.phones = new WebSocketServer({ server: this.server, path: '/phone' });
    this.phones.on('connection', (socket, req) => {
      const id = new URL(req.url ?? '', 'ws://x').searchParams.get('line') ?? '';
      const line = this.waitingLines.get(id);
      this.waitingLines.delete(id);
      if (!line) return socket.close(1008, 'no such line');
      line.attachPhone(socket);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.calls.map((c) => c.done));
    for (const socket of this.phones?.clients ?? []) socket.terminate();
    this.phones?.close();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  /** The V3 signature headers of a request; `token` another account's to sign it wrongly. */
  signatureHeaders(
    method: 'GET' | 'POST',
    url: string,
    params: Record<string, string>,
    token = this.authToken,
  ): Record<string, string> {
    const nonce = createHmac('sha256', randomUUID()).digest('hex').slice(0, 20);
    return {
      'x-plivo-signature-v3': plivoSignatureV3(token, method, url, params, nonce),
      'x-plivo-signature-v3-nonce': nonce,
    };
  }

  /** A signed form POST, as Plivo requests answer and callback URLs. */
  async postForm(url: string, params: Record<string, string>, token?: string): Promise<Response> {
    return fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...this.signatureHeaders('POST', url, params, token),
      },
      body: new URLSearchParams(params).toString(),
    });
  }

  /** A line for the stream a <Stream> asks for; its phone connects through the stand-in. */
  line(stream: PlivoStreamXml, callUuid: string): PlivoLine {
    const id = randomUUID();
    const line = new PlivoLine(stream, callUuid, this.authId, `${this.url.replace('http', 'ws')}/phone?line=${id}`);
    this.waitingLines.set(id, line);
    this.lines.push(line);
    return line;
  }

  /** An inbound call to `to`: the answer URL, signed, then the stream its XML asks for. */
  async placeInboundCall(serviceUrl: string, to: string, from: string): Promise<{ line: PlivoLine; callId: string }> {
    const callUuid = randomUUID();
    const res = await this.postForm(
      `${serviceUrl}/telephony/plivo/voice`,
      this.answerParams(callUuid, from, to, 'inbound'),
    );
    const xml = await res.text();
    const stream = streamOfXml(xml);
    const callId = stream ? new URL(stream.url).searchParams.get('call_id') : null;
    if (res.status !== 200 || !stream || !callId) throw new Error(`answer URL answered ${res.status}: ${xml}`);
    const line = this.line(stream, callUuid);
    await line.phone.connect();
    return { line, callId };
  }

  /** The answer URL for `to`, signed with a token that is not the account's. */
  badlySignedVoiceWebhook(serviceUrl: string, to: string, from: string): Promise<Response> {
    return this.postForm(
      `${serviceUrl}/telephony/plivo/voice`,
      this.answerParams(randomUUID(), from, to, 'inbound'),
      randomUUID().replace(/-/g, ''),
    );
  }

  private answerParams(callUuid: string, from: string, to: string, direction: string): Record<string, string> {
    return {
      CallUUID: callUuid,
      CallStatus: direction === 'inbound' ? 'ringing' : 'in-progress',
      Direction: direction,
      Event: 'StartApp',
      From: digits(from),
      To: digits(to),
      CallerName: '',
      ALegUUID: callUuid,
      ALegRequestUUID: randomUUID(),
      BillRate: '0.0085',
    };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const reply = (status: number, body?: unknown) => {
      res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
      res.end(body === undefined ? undefined : JSON.stringify(body));
    };
    const apiId = randomUUID();
    const error = (status: number, message: string) => reply(status, { api_id: apiId, error: message });
    const basic = `Basic ${Buffer.from(`${this.authId}:${this.authToken}`).toString('base64')}`;
    if (req.headers.authorization !== basic) return error(401, 'Authentication credentials invalid');
    let body: Record<string, unknown>;
    try {
      body = raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>);
    } catch {
      return error(400, 'invalid JSON');
    }
    // The credentials check on create: the account's own details.
    if (req.method === 'GET' && req.url === `/v1/Account/${this.authId}/`)
      return reply(200, { account_type: 'standard', auth_id: this.authId, cash_credits: '10.00000', api_id: apiId });
    const route = /^\/v1\/Account\/([^/]+)\/(Call|Request)\/(?:([^/]+)\/)?$/.exec(req.url ?? '');
    if (!route || route[1] !== this.authId) return error(404, 'not found');
    const [, , kind, id] = route;
    if (kind === 'Call' && !id && req.method === 'POST') return this.create(body, reply, error, apiId);
    if (!id) return error(405, 'method not allowed');
    const uuid = decodeURIComponent(id);
    if (req.method === 'DELETE') {
      this.hangups.push(uuid);
      const call =
        kind === 'Call' ? this.live.get(uuid) : [...this.live.values()].find((c) => c.requestUuid === uuid && !c.line);
      if (!call) return error(404, kind === 'Call' ? 'call not found' : 'request not found');
      reply(204);
      call.line?.endStream();
      return;
    }
    if (kind === 'Call' && req.method === 'POST') {
      const call = this.live.get(uuid);
      if (!call) return error(404, 'call not found');
      if (body.legs !== 'aleg' || typeof body.aleg_url !== 'string')
        return error(400, 'legs and aleg_url are required');
      reply(202, { message: 'call transferred', api_id: apiId });
      call.redirect = this.transfer(call, body.aleg_url);
      return;
    }
    return error(405, 'method not allowed');
  }

  private create(
    body: Record<string, unknown>,
    reply: (status: number, body?: unknown) => void,
    error: (status: number, message: string) => void,
    apiId: string,
  ): void {
    if (typeof body.from !== 'string' || typeof body.to !== 'string' || typeof body.answer_url !== 'string')
      return error(400, 'from, to and answer_url are required');
    const to = `+${body.to}`;
    const behavior = this.behaviors.get(to) ?? { kind: 'no-answer' };
    if (behavior.kind === 'refuse') return error(400, `${body.to} is not a valid destination`);
    const call: PlivoPlacedCall = {
      requestUuid: randomUUID(),
      callUuid: randomUUID(),
      body,
      callId: new URL(body.answer_url).searchParams.get('call_id') ?? '',
      callbacks: [],
      transfers: [],
      done: Promise.resolve(),
    };
    this.calls.push(call);
    this.live.set(call.callUuid, call);
    reply(201, { message: 'call fired', request_uuid: call.requestUuid, api_id: apiId });
    call.done = this.play(call, behavior).finally(() => this.live.delete(call.callUuid));
    call.done.catch(() => undefined);
  }

  private async play(call: PlivoPlacedCall, behavior: PlivoBehavior): Promise<void> {
    await this.callback(call, 'ring_url', { CallStatus: 'ringing', Event: 'Ring' });
    await sleep(this.ringMs);
    if (behavior.kind !== 'answer') {
      const cause = { busy: 'USER_BUSY', 'no-answer': 'NO_ANSWER', failed: 'CALL_REJECTED', refuse: 'CALL_REJECTED' };
      return void (await this.callback(call, 'hangup_url', {
        CallStatus: behavior.kind,
        HangupCause: cause[behavior.kind],
        Event: 'Hangup',
      }));
    }
    const res = await this.postForm(String(call.body.answer_url), {
      ...this.answerParams(call.callUuid, String(call.body.from), String(call.body.to), 'outbound'),
      ALegRequestUUID: call.requestUuid,
      RequestUUID: call.requestUuid,
    }).catch(() => null);
    const stream = res?.ok ? streamOfXml(await res.text()) : undefined;
    if (stream) await this.onLine(call, this.line(stream, call.callUuid), behavior.talk);
    if (call.redirect) await call.redirect;
    await this.callback(call, 'hangup_url', {
      CallStatus: 'completed',
      HangupCause: 'NORMAL_CLEARING',
      Event: 'Hangup',
    });
  }

  private async onLine(
    call: PlivoPlacedCall,
    line: PlivoLine,
    talk: ((phone: TwilioStreamCaller) => Promise<void>) | undefined,
  ): Promise<void> {
    call.line = line;
    try {
      await line.phone.connect();
      await (talk ? talk(line.phone) : line.phone.waitForClose());
      await line.phone.hangUp();
    } catch {
      // No media endpoint answered: Plivo ends the call.
    }
  }

  /**
   * A transfer: the stream ends and the call runs the aleg_url's XML. A <Conference> puts it in that room; a <Dial>
   * (a cold transfer) rings its number, its callbacks and action following.
   */
  private async transfer(call: PlivoPlacedCall, alegUrl: string): Promise<void> {
    call.line?.endStream();
    const base = {
      CallUUID: call.callUuid,
      From: String(call.body.from),
      To: String(call.body.to),
      Direction: 'outbound',
    };
    const res = await this.postForm(alegUrl, { ...base, CallStatus: 'in-progress', Event: 'Transfer' }).catch(
      () => null,
    );
    const xml = res?.ok ? await res.text() : '';
    const room = /<Conference[^>]*>([^<]+)<\/Conference>/.exec(xml)?.[1];
    if (room) {
      call.conference = unescapeXml(room);
      return;
    }
    const dial = dialOfXml(xml);
    if (!dial) return;
    const to = `+${dial.number}`;
    const bLeg = randomUUID();
    const dialParams = { ...base, DialALegUUID: call.callUuid, DialBLegUUID: bLeg, DialBLegTo: dial.number };
    await sleep(this.ringMs);
    const destination = this.behaviors.get(to) ?? { kind: 'no-answer' };
    if (destination.kind === 'answer') {
      await this.postForm(dial.attributes.callbackUrl!, {
        ...dialParams,
        DialAction: 'answer',
        DialBLegStatus: 'answer',
      })
        .then((r) => r.body?.cancel())
        .catch(() => undefined);
      call.transfers.push({ to, outcome: 'answered' });
      await this.postForm(dial.attributes.action!, {
        ...dialParams,
        DialStatus: 'completed',
        DialHangupCause: 'NORMAL_CLEARING',
      })
        .then((r) => r.body?.cancel())
        .catch(() => undefined);
      return;
    }
    const status = destination.kind === 'busy' ? 'busy' : destination.kind === 'no-answer' ? 'no-answer' : 'failed';
    call.transfers.push({ to, outcome: status });
    const after = await this.postForm(dial.attributes.action!, { ...dialParams, DialStatus: status }).catch(() => null);
    const back = after?.ok ? streamOfXml(await after.text()) : undefined;
    if (!back) return;
    const behavior = this.behaviors.get(`+${String(call.body.to)}`);
    await this.onLine(
      call,
      this.line(back, call.callUuid),
      behavior?.kind === 'answer' ? behavior.afterTransfer : undefined,
    );
  }

  /** One signed callback to the URL the call's create named under `which`. */
  private async callback(
    call: PlivoPlacedCall,
    which: 'ring_url' | 'hangup_url',
    params: Record<string, string>,
  ): Promise<void> {
    const url = call.body[which];
    if (typeof url !== 'string') return;
    const res = await this.postForm(url, {
      CallUUID: call.callUuid,
      RequestUUID: call.requestUuid,
      Direction: 'outbound',
      From: String(call.body.from),
      To: String(call.body.to),
      ...params,
    }).catch(() => null);
    await res?.body?.cancel();
    call.callbacks.push({ status: params.CallStatus!, httpStatus: res?.status ?? 0 });
  }
}
