// GET /media/twilio: Twilio Media Streams. The stream must present, in its start message's
// custom parameters, the call_id and per-call secret this service gave the carrier;
// anything else — a wrong secret, or any malformed message before start — is closed with 1008
// (policy violation) and leaves no record.
import type { FastifyInstance } from 'fastify';
import type {} from '@fastify/websocket';
import type { Logger } from 'pino';
import type { RawData } from 'ws';
import type { z } from 'zod';
import type { CallManager } from '../../call/manager.ts';
import { streamSecretMatches } from '../../records/stream-secret.ts';
import type { CallRepository } from '../../records/repository.ts';
import { answerNotUpgraded } from '../not-upgraded.ts';
import { admitMediaSocket, StartQueue, type PendingStreams } from '../pending-streams.ts';
import { parseTwilioMessage, type TwilioStart } from './media-protocol.ts';
import { TwilioTransport } from './transport.ts';

const START_TIMEOUT_MS = 10_000;

export function twilioMediaRoute(
  app: FastifyInstance,
  deps: {
    calls: CallRepository;
    manager: CallManager;
    log: Logger;
    accepting: () => boolean;
    pending: PendingStreams;
    onFrameDropped?: () => void;
  },
): void {
  app.route({
    method: 'GET',
    url: '/media/twilio',
    config: { doc: { summary: 'Twilio Media Streams (WebSocket)', tag: 'telephony', public: true } },
    // A plain HTTP request (no Upgrade) is told to use a WebSocket.
    handler: answerNotUpgraded,
    wsHandler: (socket) => {
      const log = deps.log.child({ transport: 'twilio' });
      const started = admitMediaSocket(socket, deps.pending, {
        accepting: deps.accepting(),
        startTimeoutMs: START_TIMEOUT_MS,
      });
      if (!started) return;
      const queue = new StartQueue<string>();
      const begin = async (start: z.infer<typeof TwilioStart>['start']): Promise<void> => {
        const params = start.customParameters;
        const callId = params.call_id ?? '';
        const found = callId ? await deps.calls.getForStream(callId) : undefined;
        // A call under way takes a stream only as its caller's way back from a failed transfer (its own secret for
        // that).
        const returning = found?.record.call_status === 'ongoing';
        const refuse = () => {
          log.warn(
            { call_id: callId || null, call_sid: start.callSid },
            'media stream refused: unknown call or wrong secret',
          );
          socket.close(1008, 'unknown call or wrong secret');
        };
        if (
          !found ||
          (!returning &&
            (!streamSecretMatches(params.secret ?? '', found.streamSecretHash) ||
              found.record.call_status !== 'registered'))
        )
          return refuse();
        const transport = new TwilioTransport(socket, start.streamSid, start.callSid, log.child({ call_id: callId }), {
          onFrameDropped: deps.onFrameDropped,
        });
        queue.open((text) => {
          transport.receive(text);
          deps.manager.pacerWakeups.runOverdue();
        });
        if (returning) {
          if (!deps.manager.returnStream(callId, params.secret ?? '', transport)) refuse();
          return;
        }
        void deps.manager.connect(found.orgId, callId, transport).catch((error: unknown) => {
          log.error({ err: error, call_id: callId }, 'call failed to start');
          socket.close(1011, 'internal error');
        });
      };
      socket.on('message', (data: RawData) => {
        const text = data.toString();
        if (queue.take(text)) return;
        const parsed = parseTwilioMessage(text);
        if (!parsed.ok) {
          // Twilio never sends one: whoever did is not a carrier, and is not worth a warning per message.
          log.debug({ reason: parsed.reason }, 'malformed message before start: stream closed');
          socket.close(1008, 'malformed message');
          return;
        }
        const message = parsed.message;
        if (message.event !== 'start') return; // `connected` comes first
        started();
        queue.checking();
        begin(message.start).catch((error: unknown) => {
          log.error({ err: error }, 'media stream start could not be checked');
          socket.close(1011, 'internal error');
        });
      });
    },
  });
}
