// Twilio: the voice webhook answers inbound calls with TwiML that opens a media stream to
// /media/twilio; calls are placed, hung up and transferred over its REST API (dialer.ts); every
// webhook is signed (form-webhook.ts). The service-wide account (TWILIO_*) is every organization's
// default; an organization's own Twilio account serves the numbers it holds (accounts.ts). Its
// routes are mounted whether or not it places calls: an inbound-only number needs no API credentials.
import { inboundRouteDeps, mediaRouteDeps, type CarrierDefinition } from '../carrier.ts';
import { TwilioAccounts } from './accounts.ts';
import { TwilioDialer } from './dialer.ts';
import { twilioMediaRoute } from './media-route.ts';
import { twilioStatusRoutes } from './status-webhooks.ts';
import { twilioVoiceRoutes } from './voice-webhook.ts';

export const twilioCarrier: CarrierDefinition = {
  name: 'twilio',
  async create({ config, publicUrl, carrierCalls, carrierAccounts, clock, next }) {
    const accounts = new TwilioAccounts({
      accounts: carrierAccounts,
      carrierCalls,
      serviceWide: config.twilio,
      serviceToken: config.twilioAuthToken,
      signatureRequired: config.twilioSignature === 'on',
    });
    // Always there: an organization may bring its own account where no service-wide one is set.
    const dialer = new TwilioDialer({
      accounts,
      next,
      apiBase: config.twilioApiBase,
      ringTimeoutMs: config.ringTimeoutMs,
      publicUrl,
      carrierCalls,
      clock,
    });
    return {
      name: 'twilio',
      dialer,
      mount(app, http) {
        if (!config.twilioAuthToken && config.twilioSignature !== 'on')
          http.log.warn(
            'TWILIO_SIGNATURE=off: carrier webhooks are accepted unsigned; anyone who reaches this port can start and end calls',
          );
        twilioStatusRoutes(app, {
          outcomes: http.outcomes,
          carrierCalls: http.carrierCalls,
          accounts,
          publicUrl: http.publicUrl,
          callOf: http.callOf,
        });
        twilioVoiceRoutes(app, {
          ...inboundRouteDeps(http),
          accounts,
        });
        twilioMediaRoute(app, {
          ...mediaRouteDeps(http),
        });
      },
    };
  },
};
