// GET /media/vonage: Vonage's media WebSocket (media-protocol.ts). The socket's first message,
// websocket:connected, must carry the call_id and per-call secret this service gave Vonage (the
// headers of the NCCO's websocket endpoint, ncco.ts) and a content-type of L16 at 8 or 16 kHz;
// anything else — a wrong or missing secret, audio or a malformed message before it — is closed
// with 1008 (policy violation) and leaves no record. After it, binary messages are caller audio and
// text ones Vonage's events, both for the call's transport.
import type { FastifyInstance } from 'fastify';
import { streamSecretMatches } from '../../records/stream-secret.ts';
import type { CallRepository } from '../../records/repository.ts';
import type { CarrierCallRepository } from '../carrier-calls.ts';
import { mediaStreamRoute, type MediaRouteDeps, type MediaStream } from '../media-route.ts';
import { lineFormatOf, parseVonageEvent, type VonageConnected } from './media-protocol.ts';
import { VONAGE_MEDIA_PATH } from './ncco.ts';
import { VonageTransport } from './transport.ts';

const START_TIMEOUT_MS = 10_000;

interface VonageMessage {
  data: Buffer;
  binary: boolean;
}

export interface VonageMediaDeps extends MediaRouteDeps {
  calls: CallRepository;
  carrierCalls: Pick<CarrierCallRepository, 'carrierCallId'>;
}

const asBuffer = (data: Buffer | ArrayBuffer | Buffer[]): Buffer =>
  Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);

export function vonageMediaRoute(app: FastifyInstance, deps: VonageMediaDeps): void {
  const begin = async (stream: MediaStream<VonageMessage>, connected: VonageConnected): Promise<void> => {
    const { socket, log } = stream;
    const callId = connected.call_id ?? '';
    const secret = connected.secret ?? '';
    const format = lineFormatOf(connected['content-type']);
    const found = callId && format ? await deps.calls.getForStream(callId) : undefined;
    // A call under way takes a stream only as its caller's way back from a failed transfer (its own secret for that).
    const returning = found?.record.call_status === 'ongoing';
    const refuse = () => {
      log.warn(
        { call_id: callId || null, content_type: connected['content-type'] },
        'media stream refused: unknown call, wrong secret or a format not asked for',
      );
      socket.close(1008, 'unknown call or wrong secret');
    };
    if (
      !found ||
      !format ||
      (!returning &&
        (!streamSecretMatches(secret, found.streamSecretHash) || found.record.call_status !== 'registered'))
    )
      return refuse();
    // The call's Vonage uuid, once the create call's answer (or the answer URL) recorded it; the call_id until then,
    // which the dialer resolves to the uuid when it transfers.
    const uuid = (await deps.carrierCalls.carrierCallId(callId)) || callId;
    const transport = new VonageTransport(
      socket,
      uuid,
      log.child({ call_id: callId }),
      { onFrameDropped: deps.onFrameDropped },
      format,
    );
    stream.open((message) =>
      message.binary ? transport.receiveAudio(message.data) : transport.receive(message.data.toString()),
    );
    if (returning) {
      if (!deps.manager.returnStream(callId, secret, transport)) refuse();
      return;
    }
    stream.connect(found.orgId, callId, transport);
  };
  mediaStreamRoute<VonageMessage>(app, deps, {
    url: VONAGE_MEDIA_PATH,
    summary: 'Vonage media WebSocket (L16 binary frames)',
    tag: 'telephony',
    transport: 'vonage',
    startTimeoutMs: START_TIMEOUT_MS,
    read: (data, isBinary) => ({ data: asBuffer(data), binary: isBinary }),
    beforeStart(stream, message) {
      const parsed = message.binary ? undefined : parseVonageEvent(message.data.toString());
      if (!parsed?.ok) {
        // Vonage sends websocket:connected first: whoever did not is not Vonage (not worth a warning per message).
        stream.log.debug({ reason: parsed?.reason ?? 'audio before websocket:connected' }, 'media stream closed');
        stream.socket.close(1008, 'malformed message');
        return;
      }
      const message_ = parsed.message;
      if (message_.event !== 'websocket:connected') return;
      stream.checkStart(() => begin(stream, message_));
    },
  });
}
