// Plivo, through organizations' own accounts (carrier-accounts/; there is no service-wide one):
// the application's answer URL takes inbound calls with a bidirectional L16 16 kHz stream to
// /media/plivo (voice-webhook.ts, xml.ts, media-route.ts), calls are placed, hung up and
// transferred (cold, or warm through a conference) over its REST API (dialer.ts), and every
// request Plivo sends is checked with the account's Auth Token (webhook.ts, signature.ts). It sits
// in front of Twilio: a call from a number of no Plivo account goes on to the carriers after it.
import { inboundRouteDeps, mediaRouteDeps, type CarrierDefinition } from '../carrier.ts';
import { PlivoAccounts } from './accounts.ts';
import { PlivoConsultLegs } from './consult-legs.ts';
import { PlivoDialer } from './dialer.ts';
import { plivoMediaRoute } from './media-route.ts';
import { plivoStatusRoutes } from './status-webhooks.ts';
import { plivoVoiceRoutes } from './voice-webhook.ts';

export const plivoCarrier: CarrierDefinition = {
  name: 'plivo',
  async create({ config, publicUrl, carrierCalls, carrierAccounts, clock, dispatcher, next }) {
    const accounts = new PlivoAccounts(carrierAccounts, carrierCalls);
    const consultLegs = new PlivoConsultLegs();
    // Without the outbound layer (tests that send no REST request) it answers inbound calls only.
    const dialer = dispatcher
      ? new PlivoDialer({
          accounts,
          next,
          apiBase: config.plivoApiBase,
          dispatcher,
          publicUrl,
          ringTimeoutMs: config.ringTimeoutMs,
          carrierCalls,
          clock,
          consultLegs,
        })
      : undefined;
    return {
      name: 'plivo',
      dialer,
      mount(app, http) {
        plivoVoiceRoutes(app, {
          ...inboundRouteDeps(http),
          accounts,
          consultLegs,
        });
        plivoStatusRoutes(app, {
          outcomes: http.outcomes,
          carrierCalls: http.carrierCalls,
          accounts,
          clock: http.clock,
          publicUrl: http.publicUrl,
          ringTimeoutMs: config.ringTimeoutMs,
          consultLegs,
        });
        plivoMediaRoute(app, {
          ...mediaRouteDeps(http),
        });
      },
    };
  },
};
