// A local stand-in for Vonage on 127.0.0.1, speaking what src/carriers/vonage/ relies on from
// Vonage's documentation: its Voice API (POST /v1/calls with an inline NCCO, answered 201 {uuid,
// status, direction, conversation_uuid}; PUT /v1/calls/{uuid} with {action: "hangup"} or {action:
// "transfer", destination: {type: "ncco", ncco}}; 401 unless the bearer JWT is RS256-signed by the
// application's private key — checked here with its public key — and names the application), its
// webhooks signed with the account's signature secret (Authorization: Bearer, HS256, claims iat,
// jti, iss, payload_hash = sha256 of the body, api_key, application_id: the answer URL as a GET, the
// call and transfer events as JSON POSTs), and its media WebSocket (websocket:connected with the
// endpoint's content-type and headers, then binary 16-bit little-endian L16 frames of 20 ms both
// ways, websocket:dtmf, clear answered by websocket:cleared, notify answered by websocket:notify
// with its payload once the audio before it has played). A call transferred to an NCCO whose first
// action is a conversation leaves its websocket and is recorded in that conversation (a warm
// transfer's bridge).
// The phone on the line is a simulated phone on Twilio's stream words (src/carriers/sim/), as the
// other carriers' stand-ins use: the stand-in is the carrier between it and the service, turning
// its μ-law 8 kHz into Vonage's L16 at the rate the NCCO asked for and back, its marks into notifies.
import { createHash, generateKeyPairSync, randomBytes, randomUUID, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jwtVerify, SignJWT } from 'jose';
import WebSocket, { WebSocketServer } from 'ws';
import { muLawDecode, muLawEncode } from '../../src/audio/g711.ts';
import { TwilioStreamCaller } from '../../src/carriers/sim/twilio-stream.ts';

export type VonageBehavior =
  | {
      kind: 'answer';
      /** What the callee does once the stream is open. */
      talk?: (line: TwilioStreamCaller) => Promise<void>;
      /** What it does on the stream back after a transfer that failed. */
      afterTransfer?: (line: TwilioStreamCaller) => Promise<void>;
    }
  | { kind: 'busy' }
  | { kind: 'timeout' }
  | { kind: 'rejected' }
  | { kind: 'refuse' };

export interface VonagePlacedCall {
  uuid: string;
  /** The create request's JSON body. */
  body: Record<string, unknown>;
  /** The call_id the service gave the stream (a header of its websocket endpoint). */
  callId: string;
  events: { status: string; httpStatus: number }[];
  line?: VonageLine;
  transfers: { to: string; outcome: string }[];
  /** The conversation a transfer moved the call into. */
  conversation?: string;
  done: Promise<void>;
  /** A transfer under way, until the caller's stream back (if any) has ended. */
  redirect?: Promise<void>;
}

interface WebsocketEndpoint {
  uri: string;
  contentType: string;
  headers: Record<string, string>;
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** The websocket endpoint an NCCO connects to, if any. */
export function websocketOfNcco(ncco: unknown): WebsocketEndpoint | undefined {
  if (!Array.isArray(ncco)) return undefined;
  for (const action of ncco) {
    if (!isRecord(action) || action.action !== 'connect' || !Array.isArray(action.endpoint)) continue;
    const endpoint: unknown = action.endpoint[0];
    if (!isRecord(endpoint) || endpoint.type !== 'websocket' || typeof endpoint.uri !== 'string') continue;
    const headers: Record<string, string> = {};
    if (isRecord(endpoint.headers))
      for (const [k, v] of Object.entries(endpoint.headers)) if (typeof v === 'string') headers[k] = v;
    return { uri: endpoint.uri, contentType: String(endpoint['content-type'] ?? 'audio/l16;rate=8000'), headers };
  }
  return undefined;
}

/**
 * One call's audio between a phone (its Twilio-worded stream, to this stand-in's own socket server) and the service
 * (Vonage's media WebSocket): what the carrier does in between.
 */
export class VonageLine {
  readonly phone: TwilioStreamCaller;
  private service: WebSocket | undefined;
  private phoneSocket: WebSocket | undefined;
  private readonly rate: 8000 | 16000;
  /** Notify payloads sent on to the phone as marks, by the mark's name. */
  private readonly notifies = new Map<string, unknown>();
  private marks = 0;
  private readonly toPhoneWaiting: Record<string, unknown>[] = [];
  /** Every text message the service sent, parsed. */
  readonly fromService: Record<string, unknown>[] = [];
  binaryFrames = 0;
  badFrames = 0;

  constructor(
    private readonly standIn: VonageStandIn,
    private readonly endpoint: WebsocketEndpoint,
    callUuid: string,
  ) {
    this.rate = /rate=16000/.test(endpoint.contentType) ? 16000 : 8000;
    const id = randomUUID();
    this.phone = new TwilioStreamCaller({ url: `${standIn.mediaUrl}/${id}`, customParameters: {}, callSid: callUuid });
    standIn.lines.set(id, this);
  }

  /**
   * Opens the phone's socket, then the service's (websocket:connected first): the service may speak at once (a greeting
   * already synthesised), and the phone must be on the line to hear it and its marks.
   */
  async connect(): Promise<void> {
    await this.phone.connect();
    const service = new WebSocket(this.endpoint.uri);
    this.service = service;
    await new Promise<void>((resolve, reject) => {
      service.once('open', () => resolve());
      service.once('error', reject);
    });
    service.on('error', () => undefined);
    service.send(
      JSON.stringify({
        event: 'websocket:connected',
        'content-type': this.endpoint.contentType,
        ...this.endpoint.headers,
      }),
    );
    service.on('message', (data: Buffer, isBinary) => (isBinary ? this.toPhone(data) : this.action(data.toString())));
    service.on('close', () => this.phoneSocket?.close(1000, 'call ended'));
  }

  /** The phone's socket reached the stand-in's server. */
  attachPhone(socket: WebSocket): void {
    this.phoneSocket = socket;
    for (const value of this.toPhoneWaiting.splice(0)) this.sendPhone(value);
    socket.on('message', (data: Buffer) => this.fromPhone(data.toString()));
    socket.on('close', () => {
      if (this.service?.readyState === WebSocket.OPEN) this.service.close(1000, 'caller hung up');
    });
  }

  /** The carrier ends the leg (hang-up, transfer): both sockets close. */
  end(): void {
    this.service?.close(1000, 'leg ended');
    this.phoneSocket?.close(1000, 'leg ended');
  }

  private sendService(value: Record<string, unknown>): void {
    if (this.service?.readyState === WebSocket.OPEN) this.service.send(JSON.stringify(value));
  }

  private sendPhone(value: Record<string, unknown>): void {
    // Until the phone's socket has reached the stand-in's server, what it is sent waits.
    if (!this.phoneSocket) this.toPhoneWaiting.push(value);
    else if (this.phoneSocket.readyState === WebSocket.OPEN) this.phoneSocket.send(JSON.stringify(value));
  }

  private fromPhone(text: string): void {
    const message = JSON.parse(text) as Record<string, unknown>;
    if (message.event === 'media') {
      const payload = (message.media as { payload: string }).payload;
      const pcm8 = muLawDecode(Buffer.from(payload, 'base64'));
      const pcm = this.rate === 16000 ? upsample(pcm8) : pcm8;
      const bytes = Buffer.alloc(pcm.length * 2);
      for (let i = 0; i < pcm.length; i++) bytes.writeInt16LE(pcm[i]!, i * 2);
      if (this.service?.readyState === WebSocket.OPEN) this.service.send(bytes, { binary: true });
    } else if (message.event === 'dtmf') {
      this.sendService({ event: 'websocket:dtmf', digit: (message.dtmf as { digit: string }).digit, duration: 260 });
    } else if (message.event === 'mark') {
      const name = (message.mark as { name: string }).name;
      if (this.notifies.has(name)) {
        this.sendService({ event: 'websocket:notify', payload: this.notifies.get(name) });
        this.notifies.delete(name);
      }
    }
  }

  private toPhone(frame: Buffer): void {
    this.binaryFrames++;
    const expected = this.rate / 50;
    if (frame.length !== expected * 2) {
      this.badFrames++;
      return;
    }
    const pcm = new Int16Array(expected);
    for (let i = 0; i < expected; i++) pcm[i] = frame.readInt16LE(i * 2);
    const narrow = this.rate === 16000 ? downsample(pcm) : pcm;
    this.sendPhone({ event: 'media', media: { payload: Buffer.from(muLawEncode(narrow)).toString('base64') } });
  }

  private action(text: string): void {
    const message = JSON.parse(text) as Record<string, unknown>;
    this.fromService.push(message);
    if (message.action === 'clear') {
      this.sendPhone({ event: 'clear' });
      this.sendService({ event: 'websocket:cleared' });
    } else if (message.action === 'notify') {
      // The phone hears the payload's mark under its own name (the simulated phone knows the agent's utterances by
      // their marks), else under one of the stand-in's.
      const payload = message.payload;
      const own = isRecord(payload) && typeof payload.mark === 'string' ? payload.mark : undefined;
      const name = own ?? `n${++this.marks}`;
      this.notifies.set(name, payload);
      this.sendPhone({ event: 'mark', mark: { name } });
    }
  }
}

/** 8 kHz → 16 kHz, each new sample halfway between its neighbours. */
function upsample(pcm: Int16Array): Int16Array {
  const out = new Int16Array(pcm.length * 2);
  for (let i = 0; i < pcm.length; i++) {
    const next = pcm[i + 1] ?? pcm[i]!;
    out[2 * i] = pcm[i]!;
    out[2 * i + 1] = (pcm[i]! + next) >> 1;
  }
  return out;
}

/** 16 kHz → 8 kHz, each pair averaged. */
function downsample(pcm: Int16Array): Int16Array {
  const out = new Int16Array(pcm.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = (pcm[2 * i]! + pcm[2 * i + 1]!) >> 1;
  return out;
}

export class VonageStandIn {
  readonly applicationId = randomUUID();
  readonly apiKey = hex(4);
  readonly signatureSecret = hex(16);
  /** The application's private key, PEM (PKCS#8), as the Vonage dashboard hands it out. */
  readonly privateKey: string;
  private readonly publicKey: KeyObject;
  readonly calls: VonagePlacedCall[] = [];
  readonly hangups: string[] = [];
  readonly behaviors = new Map<string, VonageBehavior>();
  readonly lines = new Map<string, VonageLine>();
  /** Events posted for inbound calls (the application's event URL). */
  readonly inboundEvents: { uuid: string; status: string; httpStatus: number }[] = [];
  ringMs = 30;
  url = '';
  mediaUrl = '';
  private server: Server | undefined;
  private wss: WebSocketServer | undefined;
  private readonly live = new Map<string, VonagePlacedCall>();

  constructor() {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.publicKey = publicKey;
    this.privateKey = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.wss = new WebSocketServer({ server: this.server });
    this.wss.on('connection', (socket, req) => {
      const line = this.lines.get((req.url ?? '').slice(1));
      if (line) line.attachPhone(socket);
      else socket.close(1008, 'no such line');
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const port = (this.server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${port}`;
    this.mediaUrl = `ws://127.0.0.1:${port}`;
    return this;
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.calls.map((c) => c.done));
    for (const client of this.wss?.clients ?? []) client.terminate();
    this.wss?.close();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  /** The Authorization header Vonage signs a webhook with; `secret` another to sign it wrongly. */
  async signature(body: string, secret = this.signatureSecret): Promise<string> {
    const token = await new SignJWT({
      iss: 'Vonage',
      payload_hash: createHash('sha256').update(body).digest('hex'),
      api_key: this.apiKey,
      application_id: this.applicationId,
    })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuedAt()
      .setJti(randomUUID())
      .sign(new TextEncoder().encode(secret));
    return `Bearer ${token}`;
  }

  /** A signed JSON POST, as Voice API events come; resolves with the answer. */
  async postJson(url: string, value: unknown, secret?: string): Promise<Response> {
    const body = JSON.stringify(value);
    return fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: await this.signature(body, secret) },
      body,
    });
  }

  /** The answer URL for a call to `to`, a signed GET as Vonage sends it by default. */
  async answer(serviceUrl: string, o: { to: string; from: string; uuid: string }, secret?: string): Promise<Response> {
    const query = new URLSearchParams({
      to: o.to.replace(/^\+/, ''),
      from: o.from.replace(/^\+/, ''),
      uuid: o.uuid,
      conversation_uuid: `CON-${randomUUID()}`,
      region_url: 'https://api-us-3.vonage.com',
    });
    return fetch(`${serviceUrl}/telephony/vonage/voice?${query.toString()}`, {
      headers: { authorization: await this.signature('', secret) },
    });
  }

  /**
   * An inbound call to `to`: the answer URL, signed, then the stream its NCCO asks for. Throws with the service's
   * answer when it took no call.
   */
  async placeInboundCall(
    serviceUrl: string,
    to: string,
    from: string,
  ): Promise<{ caller: TwilioStreamCaller; callId: string; line: VonageLine }> {
    const uuid = randomUUID();
    const res = await this.answer(serviceUrl, { to, from, uuid });
    const text = await res.text();
    const endpoint = res.status === 200 ? websocketOfNcco(JSON.parse(text)) : undefined;
    if (!endpoint?.headers.call_id) throw new Error(`answer URL answered ${res.status}: ${text}`);
    const line = new VonageLine(this, endpoint, uuid);
    await line.connect();
    // Once the caller's leg is over, the application's event URL hears so.
    void line.phone.waitForClose().then(async () => {
      const done = await this.postJson(
        `${serviceUrl}/telephony/vonage/event`,
        this.event(uuid, 'completed', to, from),
      ).catch(() => null);
      await done?.body?.cancel();
      this.inboundEvents.push({ uuid, status: 'completed', httpStatus: done?.status ?? 0 });
    });
    return { caller: line.phone, callId: endpoint.headers.call_id, line };
  }

  private event(uuid: string, status: string, to: string, from: string, extra: Record<string, unknown> = {}) {
    return {
      uuid,
      conversation_uuid: `CON-${uuid}`,
      status,
      direction: 'outbound',
      from: from.replace(/^\+/, ''),
      to: to.replace(/^\+/, ''),
      timestamp: new Date().toISOString(),
      ...extra,
    };
  }

  /** Whether the request's bearer token is the application's, RS256-signed with its private key. */
  private async authorized(req: IncomingMessage): Promise<boolean> {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!token) return false;
    try {
      const { payload } = await jwtVerify(token, this.publicKey, {
        algorithms: ['RS256'],
        requiredClaims: ['iat', 'jti'],
      });
      return payload.application_id === this.applicationId;
    } catch {
      return false;
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const reply = (status: number, body?: unknown) => {
      res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
      res.end(body === undefined ? undefined : JSON.stringify(body));
    };
    const error = (status: number, title: string, detail = title) =>
      reply(status, { type: 'https://developer.nexmo.com/api-errors', title, detail, instance: randomUUID() });
    if (!(await this.authorized(req))) return error(401, 'Unauthorized', 'You did not provide correct credentials.');
    let body: Record<string, unknown>;
    try {
      body = raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>);
    } catch {
      return error(400, 'Bad Request', 'The request body is not valid JSON.');
    }
    const url = req.url ?? '';
    // The credentials check on create: a page of the application's calls.
    if (req.method === 'GET' && url.startsWith('/v1/calls?'))
      return reply(200, { count: this.live.size, page_size: 1, _embedded: { calls: [] } });
    if (req.method === 'POST' && url === '/v1/calls') return this.create(body, reply, error);
    const modify = /^\/v1\/calls\/([^/?]+)$/.exec(url);
    if (req.method !== 'PUT' || !modify) return error(404, 'Not Found');
    const uuid = decodeURIComponent(modify[1]!);
    // Asked for even when the call has just ended on its own (Vonage then answers 404).
    if (body.action === 'hangup') this.hangups.push(uuid);
    const call = this.live.get(uuid);
    if (!call) return error(404, 'Not Found', 'The call was not found or has ended.');
    if (body.action === 'hangup') {
      reply(204);
      return call.line?.end();
    }
    const destination = body.destination;
    if (body.action === 'transfer' && isRecord(destination) && destination.type === 'ncco') {
      reply(204);
      call.redirect = this.transfer(call, destination.ncco);
      return;
    }
    return error(400, 'Bad Request', 'Unknown action.');
  }

  private create(
    body: Record<string, unknown>,
    reply: (status: number, body?: unknown) => void,
    error: (status: number, title: string, detail?: string) => void,
  ): void {
    const to = Array.isArray(body.to) && isRecord(body.to[0]) ? String(body.to[0].number ?? '') : '';
    const from = isRecord(body.from) ? String(body.from.number ?? '') : '';
    const eventUrl = Array.isArray(body.event_url) ? String(body.event_url[0] ?? '') : '';
    if (!/^\d{6,15}$/.test(to) || !/^\d{6,15}$/.test(from) || !Array.isArray(body.ncco) || !eventUrl)
      return error(400, 'Bad Request', 'to and from are numbers without "+", with an ncco and an event_url.');
    const behavior = this.behaviors.get(`+${to}`) ?? { kind: 'timeout' };
    if (behavior.kind === 'refuse') return error(400, 'Invalid destination', `${to} cannot be called.`);
    const uuid = randomUUID();
    const endpoint = websocketOfNcco(body.ncco);
    const call: VonagePlacedCall = {
      uuid,
      body,
      callId: endpoint?.headers.call_id ?? '',
      events: [],
      transfers: [],
      done: Promise.resolve(),
    };
    this.calls.push(call);
    this.live.set(uuid, call);
    reply(201, { uuid, status: 'started', direction: 'outbound', conversation_uuid: `CON-${uuid}` });
    call.done = this.play(call, behavior, eventUrl, `+${to}`, `+${from}`).finally(() => this.live.delete(uuid));
    // Played in the background: close() waits for it; a service already gone is not the test's failure.
    call.done.catch(() => undefined);
  }

  private async play(
    call: VonagePlacedCall,
    behavior: VonageBehavior,
    eventUrl: string,
    to: string,
    from: string,
  ): Promise<void> {
    const send = async (status: string) => {
      const res = await this.postJson(eventUrl, this.event(call.uuid, status, to, from)).catch(() => null);
      await res?.body?.cancel();
      call.events.push({ status, httpStatus: res?.status ?? 0 });
    };
    await send('started');
    await send('ringing');
    await sleep(this.ringMs);
    if (behavior.kind !== 'answer') return void (await send(behavior.kind));
    await send('answered');
    const endpoint = websocketOfNcco(call.body.ncco);
    if (endpoint) await this.onLine(call, new VonageLine(this, endpoint, call.uuid), behavior.talk);
    // A transfer under way keeps the call until the caller's stream back is over.
    if (call.redirect) await call.redirect;
    await send('completed');
  }

  private async onLine(
    call: VonagePlacedCall,
    line: VonageLine,
    talk: ((line: TwilioStreamCaller) => Promise<void>) | undefined,
  ): Promise<void> {
    call.line = line;
    try {
      await line.connect();
      await (talk ? talk(line.phone) : line.phone.waitForClose());
      await line.phone.hangUp();
    } catch {
      // No media endpoint answered: Vonage ends the call.
    }
  }

  /**
   * A transfer: the websocket leg ends. To a conversation, the call joins it; to a connect (a cold transfer), the
   * destination rings, and its events go to the connect's eventUrl.
   */
  private async transfer(call: VonagePlacedCall, ncco: unknown): Promise<void> {
    const connect = Array.isArray(ncco) && isRecord(ncco[0]) ? ncco[0] : {};
    if (connect.action === 'conversation' && typeof connect.name === 'string') {
      call.line?.end();
      call.conversation = connect.name;
      return;
    }
    const endpoint = Array.isArray(connect.endpoint) && isRecord(connect.endpoint[0]) ? connect.endpoint[0] : {};
    const to = `+${String(endpoint.number ?? '')}`;
    const eventUrl = Array.isArray(connect.eventUrl) ? String(connect.eventUrl[0] ?? '') : '';
    call.line?.end();
    const leg = randomUUID();
    const post = async (status: string) => {
      const res = await this.postJson(eventUrl, this.event(leg, status, to, String(connect.from ?? ''))).catch(
        () => null,
      );
      return { status: res?.status ?? 0, text: (await res?.text().catch(() => '')) ?? '' };
    };
    await post('started');
    await post('ringing');
    await sleep(this.ringMs);
    const destination = this.behaviors.get(to) ?? { kind: 'timeout' };
    if (destination.kind === 'answer') {
      await post('answered');
      call.transfers.push({ to, outcome: 'answered' });
      return;
    }
    const status = destination.kind === 'busy' ? 'busy' : destination.kind === 'timeout' ? 'timeout' : 'rejected';
    call.transfers.push({ to, outcome: status });
    // The connect was synchronous: the NCCO the event URL answers is what the caller gets next.
    const answer = await post(status);
    const back = answer.status === 200 ? websocketOfNcco(JSON.parse(answer.text || 'null')) : undefined;
    if (!back) return;
    const callee = `+${String((call.body.to as { number?: unknown }[])[0]?.number ?? '')}`;
    const behavior = this.behaviors.get(callee);
    const talk = behavior?.kind === 'answer' ? behavior.afterTransfer : undefined;
    await this.onLine(call, new VonageLine(this, back, call.uuid), talk);
  }
}
