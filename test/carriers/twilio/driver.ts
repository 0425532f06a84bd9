// Twilio under the carrier conformance suite, through the REST stand-in (test/helpers/twilio-standin.ts):
// the service's own settings hold the account (no organization's account), and its answering phones
// and inbound callers run the suite's scripts (test/carriers/stand-in-driver.ts) on the media stream,
// as a simulated phone runs them on the same protocol. Its warm transfer's legs meet in a conference.
import { randomBytes } from 'node:crypto';
import { placeInboundCall, voiceWebhook } from '../../helpers/phone.ts';
import { TwilioStandIn } from '../../helpers/twilio-standin.ts';
import { standInDriver, twilioStreamWithoutSecret } from '../stand-in-driver.ts';

export const twilioDriver = standInDriver<TwilioStandIn>({
  carrier: 'twilio',
  phones: 8100,
  busy: '+14155558201',
  noAnswer: '+14155558202',
  desk: '+14155558203',
  number: '+14155558200',
  fromSuiteNumber: true,
  start: () => new TwilioStandIn().start(),
  behave: (twilio, phone, behavior) => twilio.behaviors.set(phone, behavior),
  env: (twilio) => ({
    TWILIO_ACCOUNT_SID: twilio.accountSid,
    TWILIO_AUTH_TOKEN: twilio.authToken,
    TWILIO_API_BASE: twilio.url,
  }),
  placedCallOf: (twilio, callId) =>
    twilio.calls.find((c) => String(c.form.StatusCallback).includes(`call_id=${callId}`))?.sid,
  placeInboundCall: (twilio, serviceUrl, to, from) =>
    placeInboundCall(serviceUrl, to, from, { authToken: twilio.authToken }),
  badlySigned: (_twilio, serviceUrl, to, from) =>
    voiceWebhook(
      serviceUrl,
      { CallSid: `CA${randomBytes(16).toString('hex')}`, From: from, To: to },
      'not-the-auth-token',
    ),
  streamWithoutSecret: (_twilio, serviceUrl, callId) => twilioStreamWithoutSecret(serviceUrl, '/media/twilio', callId),
  // The bridge moves the caller's leg and the second one (leg=consult) into the call's conference.
  joined: (twilio, callId) => {
    const legs = twilio.calls.filter((c) => String(c.form.StatusCallback).includes(`call_id=${callId}`));
    return legs.length === 2 && legs.every((c) => c.conference === `transfer-${callId}`);
  },
});
