// Telnyx, through organizations' own accounts (carrier-accounts/; there is no service-wide one):
// the TeXML voice webhook answers inbound calls with a bidirectional stream to /media/telnyx
// (voice-webhook.ts, texml.ts), calls are placed, hung up and transferred over its REST API
// (dialer.ts), and every webhook is checked with the account's ed25519 key (webhook.ts). It sits in
// front of Twilio: a call from a number of no Telnyx account goes on to it.
import { inboundRouteDeps, mediaRouteDeps, type CarrierDefinition } from '../carrier.ts';
import { TelnyxAccounts } from './accounts.ts';
import { TelnyxDialer } from './dialer.ts';
import { telnyxMediaRoute } from './media-route.ts';
import { telnyxStatusRoutes } from './status-webhooks.ts';
import { telnyxVoiceRoutes } from './voice-webhook.ts';

export const telnyxCarrier: CarrierDefinition = {
  name: 'telnyx',
  async create({ config, publicUrl, carrierCalls, carrierAccounts, clock, dispatcher, next }) {
    const accounts = new TelnyxAccounts({ accounts: carrierAccounts, carrierCalls });
    // Without the outbound layer (tests that send no REST request) it answers inbound calls only.
    const dialer = dispatcher
      ? new TelnyxDialer({
          accounts,
          next,
          apiBase: config.telnyxApiBase,
          dispatcher,
          publicUrl,
          ringTimeoutMs: config.ringTimeoutMs,
          carrierCalls,
          clock,
        })
      : undefined;
    return {
      name: 'telnyx',
      dialer,
      mount(app, http) {
        telnyxVoiceRoutes(app, {
          ...inboundRouteDeps(http),
          accounts,
        });
        telnyxStatusRoutes(app, {
          outcomes: http.outcomes,
          carrierCalls: http.carrierCalls,
          accounts,
          clock: http.clock,
          restream: async (callId, secret) => {
            if (!dialer) throw new Error('Telnyx has no REST access here to stream the caller back');
            await dialer.restream(callId, secret);
          },
        });
        telnyxMediaRoute(app, {
          ...mediaRouteDeps(http),
        });
      },
    };
  },
};
