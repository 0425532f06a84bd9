// SignalWire under the carrier conformance suite, through its stand-in (test/helpers/signalwire-standin.ts,
// Twilio's with SignalWire's profile): an organization's own SignalWire account holds the suite's
// inbound number (calls go out from it too), and its answering phones and inbound callers run the
// suite's scripts (test/carriers/stand-in-driver.ts) on a wideband stream (L16 16 kHz, as the
// service's <Stream codec> asks).
import { SignalWireStandIn } from '../../helpers/signalwire-standin.ts';
import { standInDriver, twilioStreamWithoutSecret } from '../stand-in-driver.ts';

export const signalwireDriver = standInDriver<SignalWireStandIn>({
  carrier: 'signalwire',
  sharesCallCodeWith: 'twilio',
  phones: 7100,
  busy: '+14155557201',
  noAnswer: '+14155557202',
  desk: '+14155557203',
  number: '+14155557200',
  start: () => new SignalWireStandIn().start(),
  behave: (signalwire, phone, behavior) => signalwire.behaviors.set(phone, behavior),
  env: (signalwire) => ({ SIGNALWIRE_API_BASE: signalwire.url }),
  credentials: (signalwire) => signalwire.credentials(),
  placedCallOf: (signalwire, callId) =>
    signalwire.calls.find((c) => String(c.form.StatusCallback).includes(`call_id=${callId}`))?.sid,
  placeInboundCall: (signalwire, serviceUrl, to, from) => signalwire.placeInboundCall(serviceUrl, to, from),
  badlySigned: (signalwire, serviceUrl, to, from) => signalwire.badlySignedVoiceWebhook(serviceUrl, to, from),
  streamWithoutSecret: (_signalwire, serviceUrl, callId) =>
    twilioStreamWithoutSecret(serviceUrl, '/media/signalwire', callId),
});
