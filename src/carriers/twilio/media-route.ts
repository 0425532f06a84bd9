// GET /media/twilio: Twilio Media Streams. The stream must present, in its start message's
// custom parameters, the call_id and per-call secret this service gave the carrier;
// anything else — a wrong secret, or any malformed message before start — is closed with 1008
// (policy violation) and leaves no record.
import type { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import { streamSecretMatches } from '../../records/stream-secret.ts';
import type { CallRepository } from '../../records/repository.ts';
import { mediaStreamRoute, type MediaRouteDeps, type MediaStream } from '../media-route.ts';
import { parseTwilioMessage, type TwilioStart } from './media-protocol.ts';
import { TwilioTransport } from './transport.ts';

const START_TIMEOUT_MS = 10_000;

export function twilioMediaRoute(app: FastifyInstance, deps: MediaRouteDeps & { calls: CallRepository }): void {
  const begin = async (stream: MediaStream<string>, start: z.infer<typeof TwilioStart>['start']): Promise<void> => {
    const { socket, log } = stream;
    const params = start.customParameters;
    const callId = params.call_id ?? '';
    const found = callId ? await deps.calls.getForStream(callId) : undefined;
    // A call under way takes a stream only as its caller's way back from a failed transfer (its own secret for that).
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
    stream.open((text) => transport.receive(text));
    if (returning) {
      if (!deps.manager.returnStream(callId, params.secret ?? '', transport)) refuse();
      return;
    }
    stream.connect(found.orgId, callId, transport);
  };
  mediaStreamRoute(app, deps, {
    url: '/media/twilio',
    summary: 'Twilio Media Streams (WebSocket)',
    tag: 'telephony',
    transport: 'twilio',
    startTimeoutMs: START_TIMEOUT_MS,
    read: (data) => data.toString(),
    beforeStart(stream, text) {
      const parsed = parseTwilioMessage(text);
      if (!parsed.ok) {
        // Twilio never sends one: whoever did is not a carrier, and is not worth a warning per message.
        stream.log.debug({ reason: parsed.reason }, 'malformed message before start: stream closed');
        stream.socket.close(1008, 'malformed message');
        return;
      }
      const message = parsed.message;
      if (message.event !== 'start') return; // `connected` comes first
      stream.checkStart(() => begin(stream, message.start));
    },
  });
}
