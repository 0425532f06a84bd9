// GET /v2/calls/{call_id}/listen (WebSocket, the API key in Authorization): a live call's events
// as JSON text messages, as the browser page gets them, and its audio, both parties mixed, as
// binary PCM16 LE mono 16 kHz frames. Closed with 1000 when the call ends, 1008 when the call is
// not this organization's or not ongoing, 1013 when the listener falls behind.
import type { FastifyInstance } from 'fastify';
import type {} from '@fastify/websocket';
import type { CallControl } from '../../call/control.ts';
import { answerNotUpgraded } from '../../carriers/not-upgraded.ts';
import { toApiError } from '../errors.ts';
import { relaySocketToOwner, type ForwardDeps } from '../forward.ts';

/** Unsent bytes a listener may have queued (some 30 s of audio) before it is dropped. */
export const LISTENER_BACKLOG_BYTES = 1024 * 1024;

export function listenRoute(app: FastifyInstance, control: CallControl, forward: ForwardDeps): void {
  app.route<{ Params: { call_id: string } }>({
    method: 'GET',
    url: '/v2/calls/:call_id/listen',
    config: {
      doc: {
        summary:
          "Listen to an ongoing call (WebSocket): its events as JSON, both parties' audio as PCM16 16 kHz binary frames",
        tag: 'live calls',
      },
      callOf: (request) => (request.params as { call_id: string }).call_id,
    },
    handler: answerNotUpgraded,
    wsHandler: async (socket, request) => {
      if (await relaySocketToOwner(socket, request, forward, LISTENER_BACKLOG_BYTES)) return;
      let stop: () => void = () => undefined;
      let closed = false;
      socket.on('close', () => {
        closed = true;
        stop();
      });
      try {
        const stopListening = await control.listen(request.orgId, request.params.call_id, {
          notice(notice) {
            socket.send(JSON.stringify(notice));
          },
          audio(samples) {
            if (socket.bufferedAmount > LISTENER_BACKLOG_BYTES) {
              stop();
              socket.close(1013, 'listener too slow');
              return;
            }
            socket.send(Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength));
          },
          ended() {
            socket.close(1000, 'call ended');
          },
        });
        // The listener left while the call was being looked up.
        if (closed) stopListening();
        else stop = stopListening;
      } catch (error) {
        const apiError = toApiError(error);
        socket.send(
          JSON.stringify({
            type: 'error',
            ...(apiError ? apiError.toBody() : { error: 'internal error', details: '', code: 'INTERNAL' }),
          }),
        );
        socket.close(1008, apiError?.code ?? 'INTERNAL');
      }
    },
  });
}
