// GET /media/web: browser calls. The first message must be `start` with the single-use
// token of POST /v2/web-calls; anything else is closed with 1008.
import type { FastifyInstance } from 'fastify';
import type {} from '@fastify/websocket';
import type { Logger } from 'pino';
import type { RawData } from 'ws';
import type { CallManager } from '../../call/manager.ts';
import { opusAvailable } from '../../audio/opus/index.ts';
import { WEB_START_TIMEOUT_MS, WebClientMessage, type WebCodec } from './protocol.ts';
import { answerNotUpgraded } from '../../carriers/not-upgraded.ts';
import { admitMediaSocket, StartQueue, type PendingStreams } from '../../carriers/pending-streams.ts';
import type { WebCallTokens } from './tokens.ts';
import { WebTransport } from './transport.ts';

export function webMediaRoute(
  app: FastifyInstance,
  deps: {
    tokens: WebCallTokens;
    manager: CallManager;
    log: Logger;
    accepting: () => boolean;
    pending: PendingStreams;
    onFrameDropped?: () => void;
  },
): void {
  app.route({
    method: 'GET',
    url: '/media/web',
    config: { doc: { summary: 'Browser call media (WebSocket)', tag: 'web calls', public: true } },
    // A plain HTTP request (no Upgrade) is told to use a WebSocket.
    handler: answerNotUpgraded,
    wsHandler: (socket) => {
      const log = deps.log.child({ transport: 'web' });
      const started = admitMediaSocket(socket, deps.pending, {
        accepting: deps.accepting(),
        startTimeoutMs: WEB_START_TIMEOUT_MS,
      });
      if (!started) return;
      // The token is redeemed in the store while later messages wait.
      const queue = new StartQueue<{ buffer: Buffer; isBinary: boolean }>();
      const begin = async (accessToken: string | undefined, codec: WebCodec): Promise<void> => {
        // Refused before the token is spent, so the page can start again in PCM.
        if (codec === 'opus' && !opusAvailable()) {
          socket.send(
            JSON.stringify({
              type: 'error',
              code: 'CODEC_UNAVAILABLE',
              message: 'this server cannot do Opus (its addon did not load): start again with codec "pcm"',
            }),
          );
          socket.close(1008, 'codec unavailable');
          return;
        }
        const claim = accessToken === undefined ? undefined : await deps.tokens.redeem(accessToken);
        if (!claim) {
          socket.send(
            JSON.stringify({
              type: 'error',
              code: 'BAD_TOKEN',
              message: 'the first message must be start with a valid, unused access_token',
            }),
          );
          socket.close(1008, 'invalid access token');
          return;
        }
        const transport = new WebTransport(socket, log.child({ call_id: claim.callId }), {
          onFrameDropped: deps.onFrameDropped,
          codec,
        });
        queue.open((message) => {
          transport.receive(message.buffer, message.isBinary);
          deps.manager.pacerWakeups.runOverdue();
        });
        void deps.manager.connect(claim.orgId, claim.callId, transport).catch((error: unknown) => {
          log.error({ err: error, call_id: claim.callId }, 'call failed to start');
          socket.close(1011, 'internal error');
        });
      };
      socket.on('message', (data: RawData, isBinary: boolean) => {
        const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
        if (queue.take({ buffer, isBinary })) return;
        started();
        queue.checking();
        let json: unknown;
        try {
          json = isBinary ? undefined : JSON.parse(buffer.toString('utf8'));
        } catch {
          json = undefined;
        }
        const parsed = WebClientMessage.safeParse(json);
        const start = parsed.success && parsed.data.type === 'start' ? parsed.data : undefined;
        begin(start?.access_token, start?.codec ?? 'pcm').catch((error: unknown) => {
          log.error({ err: error }, 'web call start could not be checked');
          socket.close(1011, 'internal error');
        });
      });
    },
  });
}
