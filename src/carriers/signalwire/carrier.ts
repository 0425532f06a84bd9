// SignalWire, through organizations' own accounts (carrier-accounts/; there is no service-wide
// one). Its Compatibility API speaks Twilio's protocols, so Twilio's pieces serve it with
// SignalWire's flavor (flavor.ts): the cXML voice webhook at /telephony/signalwire/voice answers
// with <Connect><Stream codec="L16@16000h"> to /media/signalwire; calls are placed, hung up and
// transferred through the space's LaML REST API (https://{space_url}/api/laml/2010-04-01/Accounts/
// {project_id}/Calls…, basic auth project_id:api_token; SIGNALWIRE_API_BASE puts every space at a
// stand-in), sent through the outbound layer (net/http.ts); every webhook is checked with the
// account's signing key. It sits in front of Twilio: a call from a number of no SignalWire account
// goes on to it.
import { fetchThrough } from '../../net/fetch.ts';
import { inboundRouteDeps, mediaRouteDeps, type CarrierDefinition } from '../carrier.ts';
import { TwilioDialer } from '../twilio/dialer.ts';
import { twilioMediaRoute } from '../twilio/media-route.ts';
import { twilioStatusRoutes } from '../twilio/status-webhooks.ts';
import { twilioVoiceRoutes } from '../twilio/voice-webhook.ts';
import { SignalWireAccounts } from './accounts.ts';
import { SIGNALWIRE_FLAVOR } from './flavor.ts';

export const signalwireCarrier: CarrierDefinition = {
  name: 'signalwire',
  async create({ config, publicUrl, carrierCalls, carrierAccounts, clock, dispatcher, next }) {
    const accounts = new SignalWireAccounts({
      accounts: carrierAccounts,
      carrierCalls,
      apiBase: config.signalwireApiBase,
    });
    // Without the outbound layer (tests that send no REST request) it answers inbound calls only.
    const dialer = dispatcher
      ? new TwilioDialer({
          accounts,
          flavor: SIGNALWIRE_FLAVOR,
          next,
          // Every account names its own space's API (SignalWireAccounts); this is never used.
          apiBase: config.signalwireApiBase ?? 'https://invalid.signalwire.invalid',
          ringTimeoutMs: config.ringTimeoutMs,
          publicUrl,
          carrierCalls,
          clock,
          fetch: fetchThrough(dispatcher, { maxBodyBytes: 256 * 1024 }),
        })
      : undefined;
    return {
      name: 'signalwire',
      dialer,
      mount(app, http) {
        twilioStatusRoutes(
          app,
          {
            outcomes: http.outcomes,
            carrierCalls: http.carrierCalls,
            accounts,
            publicUrl: http.publicUrl,
            callOf: http.callOf,
          },
          SIGNALWIRE_FLAVOR,
        );
        twilioVoiceRoutes(
          app,
          {
            ...inboundRouteDeps(http),
            accounts,
          },
          SIGNALWIRE_FLAVOR,
        );
        twilioMediaRoute(
          app,
          {
            ...mediaRouteDeps(http),
          },
          SIGNALWIRE_FLAVOR,
        );
      },
    };
  },
};
