// GET /media/twilio: Twilio Media Streams. The stream must present, in its start message's
// custom parameters, the call_id and per-call secret this service gave the carrier;
// anything else — a wrong secret, or any malformed message before start — is closed with 1008
// (policy violation) and leaves no record. SignalWire's stream (/media/signalwire) is the same
// protocol: its flavor names the route and the transport, and the start message's mediaFormat (or,
// without one, the codec its <Stream> asked for) the line's format (lineFormatOf).
import type { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import { streamSecretMatches } from '../../records/stream-secret.ts';
import type { CallRepository } from '../../records/repository.ts';
import { mediaStreamRoute, type MediaRouteDeps, type MediaStream } from '../media-route.ts';
import type { LineFormat } from '../../audio/line-format.ts';
import { mediaPath, TWILIO_FLAVOR, type TwilioFlavor } from './flavor.ts';
import { parseTwilioMessage, type TwilioStart } from './media-protocol.ts';
import { TwilioTransport } from './transport.ts';

const START_TIMEOUT_MS = 10_000;

type MediaFormat = NonNullable<z.infer<typeof TwilioStart>['start']['mediaFormat']>;

/**
 * The line format a start message's mediaFormat names (`audio/x-mulaw` 8000, `audio/x-alaw` 8000, `audio/x-l16` 8000
 * or 16000 — L16 little-endian, as SignalWire's stream carries it), `fallback` when it names none; undefined for one
 * this service does not decode.
 */
export function lineFormatOf(format: MediaFormat | undefined, fallback: LineFormat): LineFormat | undefined {
  if (!format) return fallback;
  const encoding = format.encoding.toLowerCase();
  const rate = format.sampleRate;
  if (format.channels !== 1 || (rate !== 8000 && rate !== 16000)) return undefined;
  if (encoding === 'audio/x-mulaw' || encoding === 'audio/pcmu') return { codec: 'mulaw', rate };
  if (encoding === 'audio/x-alaw' || encoding === 'audio/pcma') return { codec: 'alaw', rate };
  if (encoding === 'audio/x-l16' || encoding === 'audio/l16') return { codec: 'l16le', rate };
  return undefined;
}

export function twilioMediaRoute(
  app: FastifyInstance,
  deps: MediaRouteDeps & { calls: CallRepository },
  flavor: TwilioFlavor = TWILIO_FLAVOR,
): void {
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
    const format = lineFormatOf(start.mediaFormat, flavor.lineFormat);
    if (!format) {
      log.warn({ call_id: callId, media_format: start.mediaFormat }, 'media stream refused: a format it cannot decode');
      socket.close(1003, 'unsupported media format');
      return;
    }
    const transport = new TwilioTransport(
      socket,
      start.streamSid,
      start.callSid,
      log.child({ call_id: callId }),
      { onFrameDropped: deps.onFrameDropped },
      { kind: flavor.name, format },
    );
    stream.open((text) => transport.receive(text));
    if (returning) {
      if (!deps.manager.returnStream(callId, params.secret ?? '', transport)) refuse();
      return;
    }
    stream.connect(found.orgId, callId, transport);
  };
  mediaStreamRoute(app, deps, {
    url: mediaPath(flavor),
    summary: `${flavor.label} media stream (WebSocket)`,
    tag: 'telephony',
    transport: flavor.name,
    startTimeoutMs: START_TIMEOUT_MS,
    read: (data) => data.toString(),
    beforeStart(stream, text) {
      const parsed = parseTwilioMessage(text);
      if (!parsed.ok) {
        // The carrier never sends one: whoever did is not a carrier, and is not worth a warning per message.
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
