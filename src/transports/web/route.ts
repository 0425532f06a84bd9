// GET /media/web: browser calls. The first message must be `start` with the single-use
// token of POST /v2/web-calls; anything else is closed with 1008.
import type { FastifyInstance } from 'fastify';
import { opusAvailable } from '../../audio/opus/index.ts';
import { mediaStreamRoute, type MediaRouteDeps, type MediaStream } from '../../carriers/media-route.ts';
import { WEB_START_TIMEOUT_MS, WebClientMessage, type WebCodec } from './protocol.ts';
import type { WebCallTokens } from './tokens.ts';
import { WebTransport } from './transport.ts';

interface WebMessage {
  buffer: Buffer;
  isBinary: boolean;
}

export function webMediaRoute(app: FastifyInstance, deps: MediaRouteDeps & { tokens: WebCallTokens }): void {
  const refuse = (stream: MediaStream<WebMessage>, code: string, message: string, reason: string) => {
    stream.socket.send(JSON.stringify({ type: 'error', code, message }));
    stream.socket.close(1008, reason);
  };
  const begin = async (
    stream: MediaStream<WebMessage>,
    accessToken: string | undefined,
    codec: WebCodec,
  ): Promise<void> => {
    // Refused before the token is spent, so the page can start again in PCM.
    if (codec === 'opus' && !opusAvailable()) {
      const why = 'this server cannot do Opus (its addon did not load): start again with codec "pcm"';
      return refuse(stream, 'CODEC_UNAVAILABLE', why, 'codec unavailable');
    }
    const claim = accessToken === undefined ? undefined : await deps.tokens.redeem(accessToken);
    if (!claim) {
      const why = 'the first message must be start with a valid, unused access_token';
      return refuse(stream, 'BAD_TOKEN', why, 'invalid access token');
    }
    const transport = new WebTransport(stream.socket, stream.log.child({ call_id: claim.callId }), {
      onFrameDropped: deps.onFrameDropped,
      codec,
    });
    stream.open((message) => transport.receive(message.buffer, message.isBinary));
    stream.connect(claim.orgId, claim.callId, transport);
  };
  mediaStreamRoute(app, deps, {
    url: '/media/web',
    summary: 'Browser call media (WebSocket)',
    tag: 'web calls',
    transport: 'web',
    startTimeoutMs: WEB_START_TIMEOUT_MS,
    read: (data, isBinary) => ({
      buffer: Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer),
      isBinary,
    }),
    // The first message is the start; the token is redeemed in the store while later messages wait.
    beforeStart(stream, { buffer, isBinary }) {
      let json: unknown;
      try {
        json = isBinary ? undefined : JSON.parse(buffer.toString('utf8'));
      } catch {
        json = undefined;
      }
      const parsed = WebClientMessage.safeParse(json);
      const start = parsed.success && parsed.data.type === 'start' ? parsed.data : undefined;
      stream.checkStart(() => begin(stream, start?.access_token, start?.codec ?? 'pcm'));
    },
  });
}
