// Outbound HTTP for every request a customer's configuration makes the service send: the model,
// HTTP tools, voice and recognition endpoints (and, next, webhooks). The rules each such request
// needs live here once — kept-alive pools per connect timeout, capped reads, and the egress policy
// to come — rather than a copy in each caller, the way undici composes dispatchers.
import { Agent, buildConnector, FormData, request, type Dispatcher } from 'undici';
import { EgressRefusedError, type EgressPolicy } from './egress.ts';

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
  connectTimeoutMs?: number;
  /** A caller's own dispatcher (tests, a proxy); the shared pool for its connect timeout otherwise. */
  dispatcher?: Dispatcher;
}

// undici keeps idle sockets per origin: one pool per connect timeout lets model turns, tools and
// voices reuse connections (and their TLS sessions) across turns and calls.
const pools = new Map<number, Agent>();

/** The shared pool for requests with this connect timeout. Answers are never timed here: each caller knows its own deadline. */
export function outboundPool(connectTimeoutMs: number = NET_DEFAULTS.connectTimeoutMs): Dispatcher {
  let pool = pools.get(connectTimeoutMs);
  if (!pool) {
    pool = new Agent({ connect: { timeout: connectTimeoutMs }, headersTimeout: 0, bodyTimeout: 0 });
    pools.set(connectTimeoutMs, pool);
  }
  return pool;
}

/**
 * The outbound HTTP of a running service: pools like outboundPool's, every one held to the egress
 * policy — a request to the service's own address (but its demo peer) never leaves, and a
 * connection is opened only to an address the policy allows, the one DNS gave when it was checked.
 */
export class OutboundHttp {
  private readonly pools = new Map<number, Dispatcher>();

  constructor(readonly policy: EgressPolicy) {}

  /** The guarded pool for requests with this connect timeout. */
  dispatcher(connectTimeoutMs: number = NET_DEFAULTS.connectTimeoutMs): Dispatcher {
    let pool = this.pools.get(connectTimeoutMs);
    if (!pool) {
      const policy = this.policy;
      const open = buildConnector({ timeout: connectTimeoutMs });
      const agent = new Agent({
        headersTimeout: 0,
        bodyTimeout: 0,
        connect(options, callback) {
          const port = Number(options.port) || (options.protocol === 'https:' ? 443 : 80);
          // Only the hostname changes: TLS still names (and checks) the host the URL gave.
          policy.resolve(options.hostname, port).then(
            (address) => open({ ...options, hostname: address }, callback),
            (error: Error) => callback(error, null),
          );
        },
      });
      pool = agent.compose((dispatch) => (opts, handler) => {
        const refusal = policy.requestRefusal(new URL(opts.path, opts.origin));
        if (refusal) throw new EgressRefusedError(`egress refused: ${String(opts.origin)} is ${refusal}`);
        return dispatch(opts, handler);
      });
      this.pools.set(connectTimeoutMs, pool);
    }
    return pool;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.pools.values()].map((pool) => pool.close()));
    this.pools.clear();
  }
}

/** Sends one request; the caller reads (capped) or destroys the body. */
export function sendRequest(url: string, options: OutboundRequest): Promise<HttpResponse> {
  return request(url, {
    method: options.method,
    headers: options.headers ?? {},
    body: options.body ?? null,
    signal: options.signal ?? null,
    dispatcher: options.dispatcher ?? outboundPool(options.connectTimeoutMs),
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
