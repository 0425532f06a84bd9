// Telnyx under the carrier conformance suite, through its stand-in (test/helpers/telnyx-standin.ts):
// an organization's own Telnyx account holds the suite's inbound number (calls go out from it too),
// its answering phones and inbound callers run the suite's scripts (test/carriers/stand-in-driver.ts)
// on Telnyx's media stream, whose frames arrive in swapped pairs. Its warm transfer's legs are bridged.
import { TELNYX_DIALECT, TelnyxStandIn } from '../../helpers/telnyx-standin.ts';
import { standInDriver, twilioStreamWithoutSecret } from '../stand-in-driver.ts';

export const telnyxDriver = standInDriver<TelnyxStandIn>({
  carrier: 'telnyx',
  phones: 9100,
  busy: '+14155559201',
  noAnswer: '+14155559202',
  desk: '+14155559203',
  number: '+14155559200',
  start: () => new TelnyxStandIn().start(),
  behave: (telnyx, phone, behavior) => telnyx.behaviors.set(phone, behavior),
  env: (telnyx) => ({ TELNYX_API_BASE: telnyx.url }),
  credentials: (telnyx) => ({
    api_key: telnyx.apiKey,
    public_key: telnyx.publicKey,
    connection_id: telnyx.connectionId,
  }),
  placedCallOf: (telnyx, callId) => telnyx.calls.find((c) => c.callId === callId)?.callSid,
  placeInboundCall: (telnyx, serviceUrl, to, from) => telnyx.placeInboundCall(serviceUrl, to, from),
  badlySigned: (telnyx, serviceUrl, to, from) => telnyx.badlySignedVoiceWebhook(serviceUrl, to, from),
  streamWithoutSecret: (_telnyx, serviceUrl, callId) =>
    twilioStreamWithoutSecret(serviceUrl, '/media/telnyx', callId, TELNYX_DIALECT),
  // The caller's leg and the second one (both stream with the call's call_id) were bridged to each other.
  joined: (telnyx, callId) => {
    const legs = telnyx.calls.filter((c) => c.callId === callId);
    return legs.length === 2 && legs[0]!.bridgedWith === legs[1]!.callSid && legs[1]!.bridgedWith === legs[0]!.callSid;
  },
});
