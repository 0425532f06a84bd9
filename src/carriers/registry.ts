// Every carrier the service knows, one line each. A carrier earlier in the list sits in front of
// those after it: one that serves only some numbers (the simulated phones) passes the rest on.
import type { CarrierDefinition } from './carrier.ts';
import { plivoCarrier } from './plivo/carrier.ts';
import { simCarrier } from './sim/carrier.ts';
import { signalwireCarrier } from './signalwire/carrier.ts';
import { sipCarrier } from './sip/carrier.ts';
import { telnyxCarrier } from './telnyx/carrier.ts';
import { twilioCarrier } from './twilio/carrier.ts';
import { vonageCarrier } from './vonage/carrier.ts';

export const CARRIERS: readonly CarrierDefinition[] = [
  simCarrier,
  sipCarrier,
  telnyxCarrier,
  signalwireCarrier,
  plivoCarrier,
  vonageCarrier,
  twilioCarrier,
];
