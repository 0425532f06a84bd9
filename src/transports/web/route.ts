// GET /media/web: browser calls. The first message must be `start` with the single-use
// token of POST /v2/web-calls; anything else is closed with 1008.
import type { FastifyInstance } from 'fastify';
import type {} from '@fastify/websocket';
import type { Logger } from 'pino';
import type { RawData } from 'ws';
import type { CallManager } from '../../call/manager.ts';
import { WEB_START_TIMEOUT_MS, WebClientMessage } from './protocol.ts';
import { answerNotUpgraded } from '../not-upgraded.ts';
import { admitMediaSocket, type PendingStreams } from '../pending-streams.ts';
import type { WebCallTokens } from './tokens.ts';
import { WebTransport } from './transport.ts';

export function webMediaRoute(app: FastifyInstance, deps: { tokens: WebCallTokens; manager: CallManager; log: Logger; accepting: () => boolean; pending: PendingStreams; onFrameDropped?: () => void }): void {
  app.route({
    method: 'GET',
    url: '/media/web',
    config: { doc: { summary: 'Browser call media (WebSocket)', tag: 'web calls', public: true } },
    // A plain HTTP request (no Upgrade) is told to use a WebSocket.
    handler: answerNotUpgraded,
    wsHandler: (socket) => {
      const log = deps.log.child({ transport: 'web' });
      const started = admitMediaSocket(socket, deps.pending, { accepting: deps.accepting(), startTimeoutMs: WEB_START_TIMEOUT_MS });
      if (!started) return;
      let transport: WebTransport | undefined;
      socket.on('message', (data: RawData, isBinary: boolean) => {
        const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
        if (transport) {
          transport.receive(buffer, isBinary);
          deps.manager.pacerWakeups.runOverdue();
          return;
        }
        started();
        let json: unknown;
        try {
          json = isBinary ? undefined : JSON.parse(buffer.toString('utf8'));
        } catch {
          json = undefined;
        }
        const parsed = WebClientMessage.safeParse(json);
        const claim = parsed.success && parsed.data.type === 'start' ? deps.tokens.redeem(parsed.data.access_token) : undefined;
        if (!claim) {
          socket.send(JSON.stringify({ type: 'error', code: 'BAD_TOKEN', message: 'the first message must be start with a valid, unused access_token' }));
          socket.close(1008, 'invalid access token');
          return;
        }
        transport = new WebTransport(socket, log.child({ call_id: claim.callId }), { onFrameDropped: deps.onFrameDropped });
        void deps.manager.connect(claim.orgId, claim.callId, transport).catch((error: unknown) => {
          log.error({ err: error, call_id: claim.callId }, 'call failed to start');
          socket.close(1011, 'internal error');
        });
      });
    },
  });
}
