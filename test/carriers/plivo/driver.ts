// Plivo under the carrier conformance suite, through its stand-in (test/helpers/plivo-standin.ts):
// an organization's own Plivo account holds the suite's inbound number (calls go out from it too),
// and its answering phones and inbound callers run the suite's scripts (test/carriers/stand-in-driver.ts)
// on lines whose stream to the service is Plivo's, L16 at 16 kHz. Its warm transfer's legs meet in a conference.
import WebSocket from 'ws';
import { PlivoStandIn } from '../../helpers/plivo-standin.ts';
import { standInDriver } from '../stand-in-driver.ts';

export const plivoDriver = standInDriver<PlivoStandIn>({
  carrier: 'plivo',
  phones: 9300,
  busy: '+14155559401',
  noAnswer: '+14155559402',
  desk: '+14155559403',
  number: '+14155559400',
  start: () => new PlivoStandIn().start(),
  behave: (plivo, phone, behavior) => plivo.behaviors.set(phone, behavior),
  env: (plivo) => ({ PLIVO_API_BASE: plivo.url }),
  credentials: (plivo) => ({ auth_id: plivo.authId, auth_token: plivo.authToken }),
  placedCallOf: (plivo, callId) => plivo.calls.find((c) => c.callId === callId)?.callUuid,
  // The bridge moves the caller's call and the second one (placed for the same call_id) into the call's conference.
  joined: (plivo, callId) => {
    const legs = plivo.calls.filter((c) => c.callId === callId);
    return legs.length === 2 && legs.every((c) => c.conference === `transfer-${callId}`);
  },
  placeInboundCall: async (plivo, serviceUrl, to, from) => {
    const { line, callId } = await plivo.placeInboundCall(serviceUrl, to, from);
    return { caller: line.phone, callId };
  },
  badlySigned: (plivo, serviceUrl, to, from) => plivo.badlySignedVoiceWebhook(serviceUrl, to, from),
  streamWithoutSecret: (plivo, serviceUrl, callId) => {
    const socket = new WebSocket(
      `${serviceUrl.replace('http', 'ws')}/media/plivo?call_id=${encodeURIComponent(callId)}`,
    );
    socket.on('open', () =>
      socket.send(
        JSON.stringify({
          event: 'start',
          sequenceNumber: 1,
          start: {
            callId: crypto.randomUUID(),
            streamId: crypto.randomUUID(),
            accountId: plivo.authId,
            tracks: ['inbound'],
            mediaFormat: { encoding: 'audio/x-l16', sampleRate: 16000 },
          },
          extra_headers: '',
        }),
      ),
    );
    return new Promise((resolve) => socket.on('close', (code) => resolve(code)));
  },
});
