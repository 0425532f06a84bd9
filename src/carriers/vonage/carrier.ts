// Vonage, through organizations' own accounts (carrier-accounts/; there is no service-wide one):
// the Voice application's answer URL takes inbound calls with an NCCO connecting them to a
// WebSocket at /media/vonage, wideband L16 (voice-webhook.ts, ncco.ts, media-route.ts), calls are
// placed, hung up and transferred (cold, or warm through a conversation) over its Voice API
// (dialer.ts), and every webhook is checked with the account's signature secret (webhook.ts). It
// sits in front of Twilio: a call from a number of no Vonage account goes on to it.
import { inboundRouteDeps, type CarrierDefinition } from '../carrier.ts';
import { VonageAccounts } from './accounts.ts';
import { VonageDialer } from './dialer.ts';
import { vonageEventRoutes } from './event-webhooks.ts';
import { vonageMediaRoute } from './media-route.ts';
import { vonageVoiceRoutes } from './voice-webhook.ts';

export const vonageCarrier: CarrierDefinition = {
  name: 'vonage',
  async create({ config, publicUrl, carrierCalls, carrierAccounts, clock, dispatcher, next }) {
    const accounts = new VonageAccounts({ accounts: carrierAccounts, carrierCalls });
    // Without the outbound layer (tests that send no REST request) it answers inbound calls only.
    const dialer = dispatcher
      ? new VonageDialer({
          accounts,
          next,
          apiBase: config.vonageApiBase,
          dispatcher,
          publicUrl,
          ringTimeoutMs: config.ringTimeoutMs,
          carrierCalls,
          clock,
        })
      : undefined;
    return {
      name: 'vonage',
      dialer,
      mount(app, http) {
        vonageVoiceRoutes(app, {
          ...inboundRouteDeps(http),
          accounts,
        });
        vonageEventRoutes(app, {
          outcomes: http.outcomes,
          carrierCalls: http.carrierCalls,
          accounts,
          clock: http.clock,
          publicUrl: http.publicUrl,
        });
        vonageMediaRoute(app, {
          calls: http.callRepo,
          carrierCalls: http.carrierCalls,
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
