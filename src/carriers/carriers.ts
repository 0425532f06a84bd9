// The carriers room, built from config: Twilio when its credentials are set, else no carrier
// (every outbound call fails with a reason a person can act on); SIM_NUMBERS puts simulated
// phones in front of either. Carrier reports (no answer, failure, machine) reach calls through
// CallOutcomes, and endings the carrier did not cause hang the carrier leg up too.
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import type { CallRegistry } from '../call/registry.ts';
import type { DialResult, Dialer } from '../calls/dialer.ts';
import type { CallEvents } from '../calls/events.ts';
import type { CallService } from '../calls/service.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { CarrierCallRepository } from './carrier-calls.ts';
import { CallOutcomes } from './outcomes.ts';
import { parseSimNumbers } from './sim/numbers.ts';
import { loadSimScript, type SimScript } from './sim/script.ts';
import { SimDialer } from './sim/sim-dialer.ts';
import { TwilioDialer } from './twilio/dialer.ts';

/** What runs until a carrier is configured: the call ends at once, with a reason a person can act on. */
export class NoCarrierDialer implements Dialer {
  readonly name = 'none';

  showsCallerId(): boolean {
    return false;
  }

  async dial(): Promise<DialResult> {
    return {
      status: 'failed',
      reason: 'dial_failed',
      message: 'No carrier is configured for outbound calls, so the call was not placed. Configure a carrier (for example Twilio) and try again.',
    };
  }
}

export interface Carriers {
  dialer: Dialer;
  /** Where carrier reports land; set once the calls room exists (it needs the dialer first). */
  connect(calls: CallService, registry: CallRegistry, events: CallEvents): CallOutcomes;
  close(): Promise<void>;
}

export interface CarrierDeps {
  publicUrl: () => string;
  /** The media stream address simulated phones open (the listening address, known once it listens). */
  mediaUrl: () => string;
  carrierCalls: CarrierCallRepository;
  clock: Clock;
  logger: Logger;
  /** A dialer of the caller's (tests); the configured carriers otherwise. */
  dialer?: Dialer | undefined;
}

export async function createCarriers(config: Config, deps: CarrierDeps): Promise<Carriers> {
  let outcomes: CallOutcomes | undefined;
  let liveCalls: CallRegistry | undefined;
  const dialer = deps.dialer ?? (await chooseDialer(config, deps, () => outcomes!, () => liveCalls));
  return {
    dialer,
    connect(calls, registry, events) {
      outcomes = new CallOutcomes(calls, registry);
      liveCalls = registry;
      hangUpServiceEndings(events, dialer, deps.logger);
      return outcomes;
    },
    async close() {
      if (dialer instanceof SimDialer) await dialer.close();
    },
  };
}

async function chooseDialer(config: Config, deps: CarrierDeps, outcomes: () => CallOutcomes, registry: () => CallRegistry | undefined): Promise<Dialer> {
  const carrier: Dialer = config.twilio
    ? new TwilioDialer({ ...config.twilio, ringTimeoutMs: config.ringTimeoutMs, publicUrl: deps.publicUrl, carrierCalls: deps.carrierCalls, clock: deps.clock })
    : new NoCarrierDialer();
  if (!config.simNumbers) return carrier;
  const phones = parseSimNumbers(config.simNumbers);
  const scripts = new Map<string, SimScript>();
  for (const phone of phones.values()) {
    if (phone.script && !scripts.has(phone.script)) scripts.set(phone.script, await loadSimScript(resolve(config.simScriptsDir), phone.script));
  }
  deps.logger.info({ numbers: [...phones.keys()] }, 'simulated phones ready');
  return new SimDialer({
    phones,
    scripts,
    mediaUrl: deps.mediaUrl,
    outcomes,
    registry,
    ringTimeoutMs: config.ringTimeoutMs,
    answerDelayMs: config.simAnswerDelayMs,
    fallback: carrier,
    log: deps.logger.child({ component: 'sim-phones' }),
  });
}

/** Endings the carrier did not cause: the carrier leg is hung up through its API too (a closed stream alone may leave it up). */
const SERVICE_SIDE_ENDINGS = new Set(['agent_hangup', 'max_duration_reached', 'inactivity', 'flow_error', 'error_service', 'insufficient_balance', 'voicemail_reached']);

function hangUpServiceEndings(events: CallEvents, dialer: Dialer, logger: Logger): void {
  if (!dialer.hangUpCall) return;
  events.on('ended', ({ record }) => {
    if (record.call_type !== 'outbound' || !record.disconnection_reason || !SERVICE_SIDE_ENDINGS.has(record.disconnection_reason)) return;
    dialer.hangUpCall!(record.call_id).catch((error: unknown) => logger.warn({ err: error, call_id: record.call_id }, 'hanging up the carrier call failed'));
  });
}
