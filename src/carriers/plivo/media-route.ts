// GET /media/plivo: Plivo audio streaming. The stream's address must carry the call_id and
// per-call secret this service put in the <Stream> (xml.ts); anything else — a wrong or missing
// secret, a start announcing a format the service cannot carry, or a malformed message before
// start — is closed with 1008 (policy violation) and leaves no record. The line's format is the
// one the start's mediaFormat announces.
import type { FastifyInstance } from 'fastify';
import { streamSecretMatches } from '../../records/stream-secret.ts';
import type { CallRepository } from '../../records/repository.ts';
import { mediaStreamRoute, type MediaRouteDeps, type MediaStream } from '../media-route.ts';
import { lineFormatOf, parsePlivoMessage, type PlivoStart } from './media-protocol.ts';
import { PLIVO_MEDIA_PATH } from './xml.ts';
import { PlivoTransport } from './transport.ts';

const START_TIMEOUT_MS = 10_000;

/** The call and secret the stream's address carries. */
function credentialsOf(url: string): { callId: string; secret: string } {
  const query = new URL(url, 'ws://service').searchParams;
  return { callId: query.get('call_id') ?? '', secret: query.get('secret') ?? '' };
}

export function plivoMediaRoute(app: FastifyInstance, deps: MediaRouteDeps & { calls: CallRepository }): void {
  const begin = async (stream: MediaStream<string>, start: PlivoStart): Promise<void> => {
    const { socket, log } = stream;
    const { callId, secret } = credentialsOf(stream.url);
    const found = callId ? await deps.calls.getForStream(callId) : undefined;
    // A call under way takes a stream only as its caller's way back from a failed transfer (its own secret for that).
    const returning = found?.record.call_status === 'ongoing';
    const refuse = (why = 'unknown call or wrong secret') => {
      log.warn({ call_id: callId || null, call_uuid: start.start.callId }, `media stream refused: ${why}`);
      socket.close(1008, why);
    };
    if (
      !found ||
      (!returning &&
        (!streamSecretMatches(secret, found.streamSecretHash) || found.record.call_status !== 'registered'))
    )
      return refuse();
    const format = lineFormatOf(start);
    if (!format) return refuse('unsupported media format');
    const transport = new PlivoTransport(
      socket,
      start.start.streamId,
      start.start.callId,
      log.child({ call_id: callId }),
      format,
      { onFrameDropped: deps.onFrameDropped },
    );
    stream.open((text) => transport.receive(text));
    if (returning) {
      if (!deps.manager.returnStream(callId, secret, transport)) refuse();
      return;
    }
    stream.connect(found.orgId, callId, transport);
  };
  mediaStreamRoute(app, deps, {
    url: PLIVO_MEDIA_PATH,
    summary: 'Plivo audio streaming (WebSocket)',
    tag: 'telephony',
    transport: 'plivo',
    startTimeoutMs: START_TIMEOUT_MS,
    read: (data) => data.toString(),
    beforeStart(stream, text) {
      const parsed = parsePlivoMessage(text);
      if (!parsed.ok) {
        // Plivo never sends one: whoever did is not a carrier, and is not worth a warning per message.
        stream.log.debug({ reason: parsed.reason }, 'malformed message before start: stream closed');
        stream.socket.close(1008, 'malformed message');
        return;
      }
      const message = parsed.message;
      if (message.event !== 'start') return;
      stream.checkStart(() => begin(stream, message));
    },
  });
}
