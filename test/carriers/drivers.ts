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
