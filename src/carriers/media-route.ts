// The WebSocket route a call's media comes in on, whoever sends it (a carrier's stream, a browser): a plain HTTP
// request is told to use a WebSocket; a socket is admitted only while the service accepts calls and few enough wait
// (pending-streams.ts); while its start is checked later messages wait, in order, then go to the transport, and the
// call connects. What a start looks like and how it is checked is each route's own.
import type { FastifyInstance } from 'fastify';
import type {} from '@fastify/websocket';
import type { Logger } from 'pino';
import type { RawData, WebSocket } from 'ws';
import type { CallManager } from '../call/manager.ts';
import type { CallTransport } from '../call/transport.ts';
import { answerNotUpgraded } from './not-upgraded.ts';
import { admitMediaSocket, StartQueue, type PendingStreams } from './pending-streams.ts';

export interface MediaRouteDeps {
  manager: CallManager;
  log: Logger;
  accepting: () => boolean;
  pending: PendingStreams;
  onFrameDropped?: (() => void) | undefined;
}

/** One admitted media socket, as its route sees it before and while its start is checked. */
export interface MediaStream<M> {
  readonly socket: WebSocket;
  /** The route's logger, with the transport's name. */
  readonly log: Logger;
  /**
   * The start message came: the socket no longer counts as waiting, later messages wait for open(), and `check` runs;
   * a check that throws closes the socket 1011.
   */
  checkStart(check: () => Promise<void>): void;
  /** The transport takes the messages from now on, those that waited first. */
  open(receive: (message: M) => void): void;
  /** Connects the call to the stream's transport; a call that cannot start closes the socket 1011. */
  connect(orgId: string, callId: string, transport: CallTransport): void;
}

export interface MediaRouteSpec<M> {
  url: string;
  /** For the OpenAPI document. */
  summary: string;
  tag: string;
  /** The transport's name in the logs. */
  transport: string;
  startTimeoutMs: number;
  /** One message as the route keeps it (text, or bytes and whether they were binary). */
  read(data: RawData, isBinary: boolean): M;
  /** A message before the start was checked: the route looks for its start here and calls checkStart. */
  beforeStart(stream: MediaStream<M>, message: M): void;
}

export function mediaStreamRoute<M>(app: FastifyInstance, deps: MediaRouteDeps, spec: MediaRouteSpec<M>): void {
  app.route({
    method: 'GET',
    url: spec.url,
    config: { doc: { summary: spec.summary, tag: spec.tag, public: true } },
    handler: answerNotUpgraded,
    wsHandler: (socket) => {
      const log = deps.log.child({ transport: spec.transport });
      const started = admitMediaSocket(socket, deps.pending, {
        accepting: deps.accepting(),
        startTimeoutMs: spec.startTimeoutMs,
      });
      if (!started) return;
      const queue = new StartQueue<M>();
      const stream: MediaStream<M> = {
        socket,
        log,
        checkStart(check) {
          started();
          queue.checking();
          check().catch((error: unknown) => {
            log.error({ err: error }, 'media stream start could not be checked');
            socket.close(1011, 'internal error');
          });
        },
        open(receive) {
          queue.open((message) => {
            receive(message);
            deps.manager.pacerWakeups.runOverdue();
          });
        },
        connect(orgId, callId, transport) {
          void deps.manager.connect(orgId, callId, transport).catch((error: unknown) => {
            log.error({ err: error, call_id: callId }, 'call failed to start');
            socket.close(1011, 'internal error');
          });
        },
      };
      socket.on('message', (data: RawData, isBinary: boolean) => {
        const message = spec.read(data, isBinary);
        if (queue.take(message)) return;
        spec.beforeStart(stream, message);
      });
    },
  });
}
