// GET /media/telnyx: Telnyx media streaming. The stream must present, in its start message's
// custom_parameters, the call_id and per-call secret this service gave the carrier (<Parameter>s of
// the TeXML <Stream>, or a streaming_start's custom_parameters); anything else — a wrong or missing
// secret, or a malformed message before start — is closed with 1008 (policy violation) and leaves
// no record. A stream whose start announces audio the service does not decode (media-protocol.ts:
// OPUS, AMR-WB) is closed with 1003 (unsupported data) rather than heard as noise.
import type { FastifyInstance } from 'fastify';
import { streamSecretMatches } from '../../records/stream-secret.ts';
import type { CallRepository } from '../../records/repository.ts';
import { mediaStreamRoute, type MediaRouteDeps, type MediaStream } from '../media-route.ts';
import { parseTelnyxMessage, telnyxLineFormat, type TelnyxStart } from './media-protocol.ts';
import { TELNYX_MEDIA_PATH } from './texml.ts';
import { TelnyxTransport } from './transport.ts';

const START_TIMEOUT_MS = 10_000;

export function telnyxMediaRoute(app: FastifyInstance, deps: MediaRouteDeps & { calls: CallRepository }): void {
  const begin = async (stream: MediaStream<string>, start: TelnyxStart): Promise<void> => {
    const { socket, log } = stream;
    const params = start.start.custom_parameters;
    const callId = params.call_id ?? '';
    const secret = params.secret ?? '';
    const found = callId ? await deps.calls.getForStream(callId) : undefined;
    // A call under way takes a stream only as its caller's way back from a failed transfer (its own secret for that).
    const returning = found?.record.call_status === 'ongoing';
    const refuse = () => {
      log.warn(
        { call_id: callId || null, call_control_id: start.start.call_control_id },
        'media stream refused: unknown call or wrong secret',
      );
      socket.close(1008, 'unknown call or wrong secret');
    };
    if (
      !found ||
      (!returning &&
        (!streamSecretMatches(secret, found.streamSecretHash) || found.record.call_status !== 'registered'))
    )
      return refuse();
    const format = telnyxLineFormat(start);
    if (!format) {
      log.warn(
        { call_id: callId, media_format: start.start.media_format },
        'media stream refused: its audio format is not one the service decodes',
      );
      socket.close(1003, 'unsupported media format');
      return;
    }
    const transport = new TelnyxTransport(
      socket,
      start.stream_id,
      start.start.call_control_id,
      log.child({ call_id: callId }),
      { onFrameDropped: deps.onFrameDropped },
      format,
    );
    stream.open((text) => transport.receive(text));
    if (returning) {
      if (!deps.manager.returnStream(callId, secret, transport)) refuse();
      return;
    }
    stream.connect(found.orgId, callId, transport);
  };
  mediaStreamRoute(app, deps, {
    url: TELNYX_MEDIA_PATH,
    summary: 'Telnyx media streaming (WebSocket)',
    tag: 'telephony',
    transport: 'telnyx',
    startTimeoutMs: START_TIMEOUT_MS,
    read: (data) => data.toString(),
    beforeStart(stream, text) {
      const parsed = parseTelnyxMessage(text);
      if (!parsed.ok) {
        // Telnyx never sends one: whoever did is not a carrier, and is not worth a warning per message.
        stream.log.debug({ reason: parsed.reason }, 'malformed message before start: stream closed');
        stream.socket.close(1008, 'malformed message');
        return;
      }
      const message = parsed.message;
      if (message.event !== 'start') return; // `connected` comes first
      stream.checkStart(() => begin(stream, message));
    },
  });
}
