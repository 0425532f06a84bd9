// Every carrier the service knows, one line each. A carrier earlier in the list sits in front of
// those after it: one that serves only some numbers (the simulated phones) passes the rest on.
import type { CarrierDefinition } from './carrier.ts';
import { simCarrier } from './sim/carrier.ts';
import { telnyxCarrier } from './telnyx/carrier.ts';
import { twilioCarrier } from './twilio/carrier.ts';

export const CARRIERS: readonly CarrierDefinition[] = [simCarrier, telnyxCarrier, twilioCarrier];
