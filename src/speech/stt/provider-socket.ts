// What the streaming recognisers (deepgram/, assemblyai/) share: their socket opened through the
// egress policy's opener with its failures as coded SttErrors, the caller's audio as the bytes the
// provider takes, and a provider's failure described in our own words. A provider's error text is
// never carried on: only its close code and, where it has one, its short error code.
import { muLawEncode } from '../../audio/g711.ts';
import { int16ToBuffer, isSupportedSampleRate } from '../../audio/pcm.ts';
import { EgressRefusedError } from '../../net/egress.ts';
import { UpstreamError } from '../../net/upstream-error.ts';
import type { OpenWebSocket, OutboundSocketOptions, WebSocket } from '../../net/websocket.ts';
import type { SttStreamOptions } from '../types.ts';
import { SttError } from './errors.ts';

export type StreamingProvider = 'deepgram' | 'assemblyai';

/**
 * A streaming recogniser's socket for one stream: what every provider needs checked first (the opener, a key, a rate
 * it is sent), then its socket opened at the address `connect` gives for the key, and dropped again if the stream
 * was given up on meanwhile.
 */
export async function openRecogniserSocket(
  provider: StreamingProvider,
  config: { openWebSocket?: OpenWebSocket | undefined; apiKey?: string | undefined },
  options: SttStreamOptions,
  connect: (apiKey: string) => { url: string; headers: Record<string, string> },
): Promise<WebSocket> {
  options.signal?.throwIfAborted();
  const open = config.openWebSocket;
  if (!open) throw new SttError('STT_CONFIG_INVALID', `${provider} needs the service’s WebSocket opener`);
  if (!config.apiKey) throw new SttError('STT_CONFIG_INVALID', `stt.api_key is required for the ${provider} engine`);
  if (!isSupportedSampleRate(options.sampleRate))
    throw new SttError('STT_UNSUPPORTED_RATE', `${provider} is not sent ${options.sampleRate} Hz here`);
  const { url, headers } = connect(config.apiKey);
  const socket = await openProviderSocket(provider, open, url, {
    headers,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (options.signal?.aborted) {
    socket.terminate();
    throw new SttError('STT_ABORTED', `${provider} stream opening cancelled`);
  }
  return socket;
}

/** The provider's socket, or a coded error: REFUSED (with the HTTP status) or UNREACHABLE. */
async function openProviderSocket(
  provider: StreamingProvider,
  open: OpenWebSocket,
  url: string,
  options: OutboundSocketOptions,
): Promise<WebSocket> {
  try {
    return await open(url, options);
  } catch (err) {
    if (err instanceof UpstreamError)
      throw new SttError('STT_PROVIDER_REFUSED', `${provider} refused the stream: HTTP ${err.status}`, {
        status: err.status,
      });
    if (options.signal?.aborted) throw new SttError('STT_ABORTED', `${provider} stream opening cancelled`);
    const why = err instanceof EgressRefusedError ? err.message : `could not connect (${(err as Error).message})`;
    throw new SttError('STT_PROVIDER_UNREACHABLE', `${provider}: ${why}`, { cause: err });
  }
}

/** The pushed PCM16 as the line carried it: μ-law bytes for a μ-law line, else little-endian PCM16. */
export function lineBytes(samples: Int16Array, encoding: 'mulaw' | 'linear16'): Buffer {
  if (encoding === 'mulaw') {
    const bytes = muLawEncode(samples);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  // A copy: the caller may reuse its frame while the socket still holds the bytes.
  return int16ToBuffer(samples.slice());
}

/** Short, stable error codes a provider gives (Deepgram's NET-0001, DATA-0000); anything else is dropped. */
const PROVIDER_CODE = /\b[A-Z]{2,8}-\d{4}\b/;

/** The provider closed the stream unasked or with an error: its close code, and its own short code if it gave one. */
export function providerClosed(provider: StreamingProvider, closeCode: number, reason: string): SttError {
  const code = PROVIDER_CODE.exec(reason)?.[0];
  return new SttError(
    'STT_PROVIDER_ERROR',
    `${provider} closed the stream (close code ${closeCode}${code ? `, ${code}` : ''})`,
  );
}

/** A text frame's words, however `ws` handed the frame over. */
export function frameText(data: Buffer | ArrayBuffer | Buffer[]): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return (Buffer.isBuffer(data) ? data : Buffer.from(new Uint8Array(data))).toString('utf8');
}
