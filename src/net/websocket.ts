// WebSocket connections out (streaming recognisers and voices, speech-to-speech models) under the
// same egress policy as HTTP requests (egress-guard.ts): a ws: or wss: URL is judged as the http: or
// https: URL of the same place, and the socket is opened only to the address the policy resolved and
// allowed — the connection's own lookup returns that address, so DNS cannot move it in between.
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import WebSocket from 'ws';
import { EgressRefusedError, type EgressPolicy } from './egress.ts';
import { NET_DEFAULTS } from './http.ts';
import { UpstreamError } from './upstream-error.ts';

export { WebSocket };

export interface OutboundSocketOptions {
  /** Sent with the upgrade request (a provider's Authorization or api-key header). */
  headers?: Record<string, string>;
  protocols?: string[];
  /** From the first byte to the open socket; the HTTP connect timeout by default. */
  connectTimeoutMs?: number;
  /** Aborting before the socket opens rejects and closes it. */
  signal?: AbortSignal;
  /** The largest message taken from the provider. */
  maxPayloadBytes?: number;
}

export type OpenWebSocket = (url: string, options?: OutboundSocketOptions) => Promise<WebSocket>;

/** The largest message a provider may send (an audio chunk or a JSON event): 8 MiB. */
const DEFAULT_MAX_PAYLOAD_BYTES = 8 * 1024 * 1024;

/** An opener of WebSockets held to `policy`. */
export function webSocketOpener(policy: EgressPolicy): OpenWebSocket {
  return (url, options = {}) => openWebSocket(policy, url, options);
}

async function openWebSocket(policy: EgressPolicy, raw: string, options: OutboundSocketOptions): Promise<WebSocket> {
  const url = new URL(raw);
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:')
    throw new EgressRefusedError(`egress refused: ${url.protocol} is not ws or wss`);
  const asHttp = new URL(raw.replace(/^ws/i, 'http'));
  const refusal = policy.requestRefusal(asHttp);
  if (refusal) throw new EgressRefusedError(`egress refused: ${asHttp.origin} is ${refusal}`);
  const port = Number(url.port) || (url.protocol === 'wss:' ? 443 : 80);
  options.signal?.throwIfAborted();
  const address = await policy.resolve(url.hostname, port);
  // Only the lookup changes: TLS still names (and checks) the host the URL gave.
  const lookup: LookupFunction = (_hostname, lookupOptions, callback) => {
    if (lookupOptions.all) callback(null, [{ address, family: isIP(address) }]);
    else callback(null, address, isIP(address));
  };
  const socket = new WebSocket(url, options.protocols ?? [], {
    headers: options.headers ?? {},
    handshakeTimeout: options.connectTimeoutMs ?? NET_DEFAULTS.connectTimeoutMs,
    maxPayload: options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
    lookup,
    followRedirects: false,
    perMessageDeflate: false,
  });
  return new Promise<WebSocket>((resolve, reject) => {
    const onAbort = () => {
      socket.on('error', () => undefined);
      socket.terminate();
      reject(options.signal?.reason instanceof Error ? options.signal.reason : new Error('aborted'));
    };
    const settle = () => {
      options.signal?.removeEventListener('abort', onAbort);
      socket.off('open', onOpen);
      socket.off('error', onError);
      socket.off('unexpected-response', onRefused);
    };
    const onOpen = () => {
      settle();
      // A provider may greet in the very packet that completes the upgrade (AssemblyAI's Begin): held until the
      // caller, resumed by this resolve, has attached its listeners — its continuation runs before the next
      // turn of the event loop.
      socket.pause();
      resolve(socket);
      setImmediate(() => socket.resume());
    };
    const onError = (error: Error) => {
      settle();
      reject(error);
    };
    // The provider answered the upgrade with an HTTP status (a wrong key, an unknown model): its
    // body is not read, only its status reported.
    const onRefused = (_request: unknown, response: { statusCode?: number; statusMessage?: string }) => {
      settle();
      // Aborting a handshake emits 'error' on the next tick: heard here, or it would be thrown as uncaught.
      socket.on('error', () => undefined);
      socket.terminate();
      reject(new UpstreamError(response.statusCode ?? 0, response.statusMessage ?? 'upgrade refused'));
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    socket.on('open', onOpen);
    socket.on('error', onError);
    socket.on('unexpected-response', onRefused);
  });
}
