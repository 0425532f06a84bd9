// Every registered carrier's conformance driver, one line each (carriers/registry.ts lists the carriers).
import type { CarrierDriver } from './conformance.ts';
import { simDriver } from './sim/driver.ts';
import { telnyxDriver } from './telnyx/driver.ts';
import { twilioDriver } from './twilio/driver.ts';

export const DRIVERS: readonly CarrierDriver[] = [simDriver, telnyxDriver, twilioDriver];
