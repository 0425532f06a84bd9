// A call runs on the node its media reached, but a request about it (live control, a carrier's
// callback, a listener's socket) may reach any node: that node passes it on to the call's owner
// once, over the owner's peer address, and answers with what the owner answered. A request that
// was passed on already is answered where it lands (no loops).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Agent, request as send } from 'undici';
import WebSocket from 'ws';
import { rawBodyOf } from '../carriers/raw-bodies.ts';

export const FORWARDED_BY_HEADER = 'x-voicecall-forwarded-by';

/** Request headers the owner needs to answer as this node would: the key, the carrier's signature, idempotency. */
const PASSED_HEADERS = [
  'authorization',
  'content-type',
  'x-twilio-signature',
  'telnyx-signature-ed25519',
  'telnyx-timestamp',
  'idempotency-key',
  'user-agent',
];
/** Response headers worth passing back. */
const RETURNED_HEADERS = ['content-type', 'retry-after'];

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The call a request of this route is about, when it may run on another node. */
    callOf?: (request: FastifyRequest) => string | undefined | Promise<string | undefined>;
  }
}

export interface ForwardDeps {
  /** The owner's peer address when another live node runs the call; null to answer here. */
  ownerUrl: (callId: string) => Promise<string | null>;
  nodeId: string;
}

/** Peers are the operator's own processes: a plain pool, not the egress policy customers' URLs go through. */
function peerPool(): Agent {
  return new Agent({ connect: { timeout: 2_000 }, headersTimeout: 10_000, bodyTimeout: 10_000 });
}

const callIds = new WeakMap<FastifyRequest, Promise<string | undefined>>();

/**
 * The call a request is about, as its route's `callOf` finds it: looked up once per request, by the forwarding and the
 * handler alike.
 */
export function callOfRequest(request: FastifyRequest): Promise<string | undefined> {
  let callId = callIds.get(request);
  if (!callId) {
    callId = Promise.resolve(request.routeOptions.config.callOf?.(request));
    callIds.set(request, callId);
  }
  return callId;
}

/** The node a request is meant for, or null: it came from a peer already, or the call runs here. */
async function ownerOf(request: FastifyRequest, deps: ForwardDeps): Promise<string | null> {
  if (request.headers[FORWARDED_BY_HEADER] !== undefined) return null;
  const callId = await callOfRequest(request);
  return callId ? deps.ownerUrl(callId) : null;
}

function headersFor(request: FastifyRequest, deps: ForwardDeps): Record<string, string> {
  const headers: Record<string, string> = { [FORWARDED_BY_HEADER]: deps.nodeId };
  for (const name of PASSED_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}

const receivedJson = new WeakMap<FastifyRequest, string>();

/** Called by the JSON parser: the body is passed on as the client sent it, not as this node re-serialised it. */
export function keepReceivedJson(request: FastifyRequest, text: string): void {
  receivedJson.set(request, text);
}

/**
 * The body as it came, so the owner answers what it would have answered had the request reached it
 * first: none when the client sent none (a body without a content type is 415 there), the JSON text
 * as received (or a signing carrier's body as received), or a carrier's form.
 */
function bodyOf(request: FastifyRequest): string | undefined {
  const type = request.headers['content-type'];
  if (request.method === 'GET' || request.method === 'HEAD' || type === undefined || request.body === undefined)
    return undefined;
  // A carrier that signs its bodies' bytes kept them as they came (carriers/raw-bodies.ts).
  const json = receivedJson.get(request) ?? rawBodyOf(request);
  if (json !== undefined) return json;
  if (type.startsWith('application/x-www-form-urlencoded'))
    return new URLSearchParams(request.body as Record<string, string>).toString();
  return JSON.stringify(request.body);
}

async function forward(
  request: FastifyRequest,
  reply: FastifyReply,
  ownerUrl: string,
  deps: ForwardDeps,
  pool: Agent,
): Promise<FastifyReply> {
  const answer = await send(new URL(request.url, ownerUrl), {
    method: request.method as 'POST',
    headers: headersFor(request, deps),
    body: bodyOf(request),
    dispatcher: pool,
  });
  const text = await answer.body.text();
  for (const name of RETURNED_HEADERS) {
    const value = answer.headers[name];
    if (typeof value === 'string') reply.header(name, value);
  }
  reply.code(answer.statusCode);
  request.log.debug({ owner: ownerUrl, status: answer.statusCode }, 'request passed on to the node running the call');
  // JSON goes back through the route's serializer; anything else (a carrier's TwiML) as it came.
  const json = String(answer.headers['content-type'] ?? '').startsWith('application/json');
  return reply.send(json && text.length > 0 ? JSON.parse(text) : text.length > 0 ? text : null);
}

/** Passes requests on to the node running their call; the returned pool is closed with the server. */
export function forwardToOwners(app: FastifyInstance, deps: ForwardDeps): Agent {
  const pool = peerPool();
  // preHandler: after authentication, the carrier's signature and the schema, so a peer only ever
  // receives requests this node would have accepted itself.
  app.addHook('preHandler', async (request, reply) => {
    if (request.ws) return;
    const ownerUrl = await ownerOf(request, deps);
    if (ownerUrl) return forward(request, reply, ownerUrl, deps, pool);
  });
  return pool;
}

/**
 * A WebSocket whose call runs on another node is joined to the same socket there: messages both
 * ways as they are (text or binary), and the owner's close code back to the client. False when the
 * call runs here.
 */
export async function relaySocketToOwner(
  socket: WebSocket,
  request: FastifyRequest,
  deps: ForwardDeps,
  maxBacklogBytes: number,
): Promise<boolean> {
  // What the client sends while the owner is looked up and connected to is sent on once it is.
  const early: { data: WebSocket.RawData; binary: boolean }[] = [];
  const keep = (data: WebSocket.RawData, binary: boolean) => early.push({ data, binary });
  socket.on('message', keep);
  const ownerUrl = await ownerOf(request, deps);
  socket.off('message', keep);
  if (!ownerUrl) {
    for (const { data, binary } of early) socket.emit('message', data, binary);
    return false;
  }
  const target = new URL(request.url, ownerUrl);
  target.protocol = target.protocol === 'https:' ? 'wss:' : 'ws:';
  const upstream = new WebSocket(target, { headers: headersFor(request, deps) });
  upstream.on('open', () => {
    for (const { data, binary } of early.splice(0)) upstream.send(data, { binary });
  });
  upstream.on('message', (data, binary) => {
    if (socket.readyState !== WebSocket.OPEN) return;
    // A client that cannot keep up is dropped here, as the owner would drop it.
    if (socket.bufferedAmount > maxBacklogBytes) {
      socket.close(1013, 'listener too slow');
      return;
    }
    socket.send(data, { binary });
  });
  socket.on('message', (data, binary) => {
    if (upstream.readyState === WebSocket.OPEN) upstream.send(data, { binary });
    else if (upstream.readyState === WebSocket.CONNECTING) early.push({ data, binary });
  });
  upstream.on('close', (code, reason) => {
    // 1005 (no status) and 1006 (abnormal) may not be sent on the wire.
    if (socket.readyState === WebSocket.OPEN) socket.close(code === 1005 || code === 1006 ? 1011 : code, reason);
  });
  upstream.on('error', (error) => {
    request.log.warn({ err: error, owner: ownerUrl }, 'relay to the node running the call failed');
    if (socket.readyState === WebSocket.OPEN) socket.close(1011, 'node running the call unreachable');
  });
  socket.on('close', () => upstream.terminate());
  return true;
}
