// Vonage under the carrier conformance suite, through its stand-in (test/helpers/vonage-standin.ts):
// an organization's own Vonage account holds the suite's inbound number (calls go out from it too),
// its answering phones and inbound callers run the suite's scripts (test/carriers/stand-in-driver.ts),
// and the stand-in carries their audio to the service as Vonage does: binary L16 at 16 kHz on its
// media WebSocket. A phone that rings out is Vonage's "timeout". Its warm transfer's legs meet in a
// conversation.
import WebSocket from 'ws';
import { VonageStandIn } from '../../helpers/vonage-standin.ts';
import { standInDriver } from '../stand-in-driver.ts';

export const vonageDriver = standInDriver<VonageStandIn>({
  carrier: 'vonage',
  phones: 9500,
  busy: '+14155559601',
  noAnswer: '+14155559602',
  desk: '+14155559603',
  number: '+14155559600',
  start: () => new VonageStandIn().start(),
  behave: (vonage, phone, behavior) =>
    vonage.behaviors.set(phone, behavior.kind === 'no-answer' ? { kind: 'timeout' } : behavior),
  env: (vonage) => ({ VONAGE_API_BASE: vonage.url }),
  credentials: (vonage) => ({
    application_id: vonage.applicationId,
    private_key: vonage.privateKey,
    signature_secret: vonage.signatureSecret,
  }),
  placedCallOf: (vonage, callId) => vonage.calls.find((c) => c.callId === callId)?.uuid,
  // The bridge moves the caller's call and the second one (placed for the same call_id) into the call's conversation.
  joined: (vonage, callId) => {
    const legs = vonage.calls.filter((c) => c.callId === callId);
    return legs.length === 2 && legs.every((c) => c.conversation === `transfer-${callId}`);
  },
  placeInboundCall: (vonage, serviceUrl, to, from) => vonage.placeInboundCall(serviceUrl, to, from),
  badlySigned: (vonage, serviceUrl, to, from) =>
    vonage.answer(serviceUrl, { to, from, uuid: crypto.randomUUID() }, 'not-the-signature-secret'),
  async streamWithoutSecret(_vonage, serviceUrl, callId) {
    const socket = new WebSocket(`${serviceUrl.replace('http', 'ws')}/media/vonage`);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    socket.send(
      JSON.stringify({ event: 'websocket:connected', 'content-type': 'audio/l16;rate=16000', call_id: callId }),
    );
    return closed;
  },
});
