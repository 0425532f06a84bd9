// Every registered carrier's conformance driver, one line each (carriers/registry.ts lists the carriers).
import type { CarrierDriver } from './conformance.ts';
import { signalwireDriver } from './signalwire/driver.ts';
import { plivoDriver } from './plivo/driver.ts';
import { simDriver } from './sim/driver.ts';
import { sipDriver } from './sip/driver.ts';
import { telnyxDriver } from './telnyx/driver.ts';
import { twilioDriver } from './twilio/driver.ts';
import { vonageDriver } from './vonage/driver.ts';

export const DRIVERS: readonly CarrierDriver[] = [
  simDriver,
  telnyxDriver,
  signalwireDriver,
  plivoDriver,
  vonageDriver,
  twilioDriver,
  sipDriver,
];

/**
 * The conformance suite's files (test/e2e/carrier-conformance-*.test.ts), each its carriers against one service, so the
 * carriers run side by side (all in one file took ~200 s, the longest file by far). The simulated phones and Twilio
 * share the suite's default from-number; SignalWire runs Twilio's code.
 */
export const CONFORMANCE_GROUPS = {
  twilio: [simDriver, twilioDriver, signalwireDriver],
  telnyxPlivo: [telnyxDriver, plivoDriver],
  vonageSip: [vonageDriver, sipDriver],
} as const satisfies Record<string, readonly CarrierDriver[]>;
