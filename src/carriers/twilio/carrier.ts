// Twilio: the voice webhook answers inbound calls with TwiML that opens a media stream to
// /media/twilio; calls are placed, hung up and transferred over its REST API (dialer.ts) when its
// credentials are set; every webhook is signed (form-webhook.ts). Its routes are mounted whether
// or not it places calls: an inbound-only number needs no API credentials.
import type { CarrierDefinition } from '../carrier.ts';
import { TwilioDialer } from './dialer.ts';
import { twilioMediaRoute } from './media-route.ts';
import { twilioStatusRoutes } from './status-webhooks.ts';
import { twilioVoiceRoutes } from './voice-webhook.ts';

export const twilioCarrier: CarrierDefinition = {
  name: 'twilio',
  async create({ config, publicUrl, carrierCalls, clock }) {
    const dialer = config.twilio
      ? new TwilioDialer({ ...config.twilio, ringTimeoutMs: config.ringTimeoutMs, publicUrl, carrierCalls, clock })
      : undefined;
    const signing = { authToken: config.twilioAuthToken, required: config.twilioSignature === 'on' };
    return {
      name: 'twilio',
      dialer,
      mount(app, http) {
        if (!signing.authToken && !signing.required)
          http.log.warn(
            'TWILIO_SIGNATURE=off: carrier webhooks are accepted unsigned; anyone who reaches this port can start and end calls',
          );
        twilioStatusRoutes(app, {
          outcomes: http.outcomes,
          carrierCalls: http.carrierCalls,
          signing,
          publicUrl: http.publicUrl,
          callOf: http.callOf,
        });
        twilioVoiceRoutes(app, {
          agents: http.agents,
          calls: http.calls,
          signing,
          publicUrl: http.publicUrl,
          answers: http.answers,
          clock: http.clock,
          onRegistered: http.awaitStream,
        });
        twilioMediaRoute(app, {
          calls: http.callRepo,
          manager: http.manager,
          log: http.log,
          accepting: http.accepting,
          pending: http.pending,
          onFrameDropped: http.onFrameDropped,
        });
      },
    };
  },
};
