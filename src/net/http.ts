// Outbound HTTP: the one way out of the service for every request its configuration makes it send
// (the model, HTTP tools, voice and recognition endpoints, webhooks; next, carriers' REST and
// providers). OutboundHttp builds the dispatchers once from the egress policy — kept-alive pools
// per connect timeout, every one composed of the egress interceptor and connector
// (egress-guard.ts) and the capped error-body interceptor (upstream-error.ts) — and sendRequest
// sends only through a dispatcher given to it: there is no default pool to fall back on. Deadlines
// and stall watches (watchdog.ts) and retry delays (backoff.ts) are the callers' to apply, with the
// timers and randomness they are given.
import { Agent, FormData, request, type Dispatcher } from 'undici';
import type { EgressPolicy } from './egress.ts';
import { egressConnector, egressInterceptor } from './egress-guard.ts';
import { UPSTREAM_ERROR_DEFAULTS, upstreamErrorInterceptor, type UpstreamErrorsOption } from './upstream-error.ts';

/** Multipart bodies (file uploads to recognition endpoints) are built with undici's own FormData. */
export { FormData };
export type { Dispatcher };

export const NET_DEFAULTS = {
  /** A healthy server accepts a connection within this; slow answers are each caller's own limit. */
  connectTimeoutMs: 10_000,
} as const;

export type HttpResponse = Dispatcher.ResponseData;
export type ResponseBody = HttpResponse['body'];

export interface OutboundRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  body?: string | Uint8Array | FormData | null;
  /** Aborts the request and releases its socket at once (barge-in, hangup, a caller's deadline). */
  signal?: AbortSignal;
  /** One of OutboundHttp's dispatchers (in tests, one the test built): required, there is no default pool. */
  dispatcher: Dispatcher;
  /** A non-2xx answer fails the request with UpstreamError (its body read to the cap) instead of being returned. */
  upstreamErrors?: boolean;
}

/**
 * The outbound HTTP of a running service: one kept-alive pool per connect timeout (model turns,
 * tools and voices reuse connections and their TLS sessions across turns and calls), every one held
 * to the egress policy — a request to the service's own address (but its demo peer) never leaves,
 * and a connection is opened only to an address the policy allows, the one DNS gave when it was
 * checked. Answers are never timed here: each caller knows its own deadline.
 */
export class OutboundHttp {
  private readonly pools = new Map<number, Dispatcher>();

  constructor(readonly policy: EgressPolicy) {}

  /** The guarded pool for requests with this connect timeout. */
  dispatcher(connectTimeoutMs: number = NET_DEFAULTS.connectTimeoutMs): Dispatcher {
    let pool = this.pools.get(connectTimeoutMs);
    if (!pool) {
      const agent = new Agent({
        headersTimeout: 0,
        bodyTimeout: 0,
        connect: egressConnector(this.policy, connectTimeoutMs),
      });
      // The last composed runs first: the policy refuses before an error body could be read.
      pool = agent.compose(upstreamErrorInterceptor(), egressInterceptor(this.policy));
      this.pools.set(connectTimeoutMs, pool);
    }
    return pool;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.pools.values()].map((pool) => pool.close()));
    this.pools.clear();
  }
}

/** Sends one request through `options.dispatcher`; the caller reads (capped) or destroys the body. */
export function sendRequest(url: string, options: OutboundRequest): Promise<HttpResponse> {
  // Refused, not defaulted: a request without a dispatcher would leave unguarded.
  if (!options.dispatcher)
    return Promise.reject(new TypeError('sendRequest needs a dispatcher (OutboundHttp.dispatcher())'));
  const upstream: UpstreamErrorsOption = options.upstreamErrors
    ? { upstreamErrors: { maxBytes: UPSTREAM_ERROR_DEFAULTS.bodyBytes } }
    : {};
  return request(url, {
    method: options.method,
    headers: options.headers ?? {},
    body: options.body ?? null,
    signal: options.signal ?? null,
    dispatcher: options.dispatcher,
    ...upstream,
  });
}

/** Reads at most `max` bytes of a response body; past that the body is dropped unread. */
export async function readBodyCapped(body: ResponseBody, max: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    parts.push(buf);
    size += buf.length;
    if (size >= max) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(parts, size).subarray(0, max);
}

/** Cuts UTF-8 text at `maxBytes` without leaving half a character. */
export function cutUtf8(bytes: Uint8Array, maxBytes: number): string {
  if (bytes.length <= maxBytes) return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('utf8');
  return new TextDecoder('utf-8').decode(bytes.subarray(0, maxBytes), { stream: true });
}

/** At most `maxBytes` of a body as text (error messages, small JSON answers). */
export async function readTextCapped(body: ResponseBody, maxBytes: number): Promise<string> {
  return cutUtf8(await readBodyCapped(body, maxBytes), maxBytes);
}
