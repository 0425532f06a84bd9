// The carriers room, built from config and registry.ts: each registered carrier that config turns
// on, the simulated phones (SIM_NUMBERS) in front of Twilio (when its credentials are set), and
// behind them no carrier (every outbound call fails with a reason a person can act on). Carrier reports (no answer,
// failure, machine) reach calls through
// CallOutcomes, and endings the carrier did not cause hang the carrier leg up too.
import type { EgressPolicy } from '../net/egress.ts';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { CallRegistry } from '../call/registry.ts';
import type { DialResult, Dialer } from '../records/dialer.ts';
import type { CallEvents } from '../records/events.ts';
import type { CallService } from '../records/service.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Dispatcher } from '../net/http.ts';
import type { Carrier, CarrierAccountLookup, CarrierDefinition, CarrierHttp, SipTrunkLookup } from './carrier.ts';
import type { CarrierCallRepository } from './carrier-calls.ts';
import { CallOutcomes } from './outcomes.ts';
import { CARRIERS } from './registry.ts';

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
      message:
        'No carrier is configured for outbound calls, so the call was not placed. Configure a carrier (for example Twilio) and try again.',
    };
  }
}

export interface Carriers {
  /** The registered carriers' dialers as one: each in front of those after it, the last refusing every call. */
  dialer: Dialer;
  /** Where carrier reports land; set once the calls room exists (it needs the dialer first). */
  connect(calls: CallService, registry: CallRegistry, events: CallEvents): CallOutcomes;
  /** Every carrier's own routes (webhooks, media stream), on the service's server. */
  mount(app: FastifyInstance, http: CarrierHttp): void;
  close(): Promise<void>;
}

export interface CarrierDeps {
  publicUrl: () => string;
  /** Where this process is reached by its peers and its own simulated phones (known once it listens). */
  peerUrl: () => string;
  carrierCalls: CarrierCallRepository;
  carrierAccounts: CarrierAccountLookup;
  sipTrunks: SipTrunkLookup;
  clock: Clock;
  logger: Logger;
  /** The guarded pool carriers send their REST requests through (net/http.ts). */
  dispatcher?: Dispatcher | undefined;
  /** The egress policy that pool holds to, for what carriers reach without it (SIP trunks' addresses). */
  egress?: EgressPolicy | undefined;
  /** A dialer of the caller's (tests); the configured carriers' otherwise. */
  dialer?: Dialer | undefined;
  /** The carriers to build, in order (tests); registry.ts's otherwise. */
  registered?: readonly CarrierDefinition[] | undefined;
}

export async function createCarriers(config: Config, deps: CarrierDeps): Promise<Carriers> {
  let outcomes: CallOutcomes | undefined;
  let liveCalls: CallRegistry | undefined;
  const built: Carrier[] = [];
  let chain: Dialer = new NoCarrierDialer();
  // Built from the last: each carrier is handed the ones after it.
  for (const definition of [...(deps.registered ?? CARRIERS)].reverse()) {
    const carrier = await definition.create({
      config,
      publicUrl: deps.publicUrl,
      peerUrl: deps.peerUrl,
      carrierCalls: deps.carrierCalls,
      carrierAccounts: deps.carrierAccounts,
      sipTrunks: deps.sipTrunks,
      outcomes: () => outcomes!,
      registry: () => liveCalls,
      clock: deps.clock,
      logger: deps.logger,
      dispatcher: deps.dispatcher,
      egress: deps.egress,
      next: chain,
    });
    if (!carrier) continue;
    built.unshift(carrier);
    if (carrier.dialer) chain = carrier.dialer;
  }
  const dialer = deps.dialer ?? chain;
  return {
    dialer,
    connect(calls, registry, events) {
      outcomes = new CallOutcomes(calls, registry);
      liveCalls = registry;
      hangUpServiceEndings(events, dialer, deps.logger);
      return outcomes;
    },
    mount(app, http) {
      for (const carrier of built) carrier.mount?.(app, http);
    },
    async close() {
      for (const carrier of built) await carrier.close?.();
    },
  };
}

/**
 * Endings the carrier did not cause: the carrier leg is hung up through its API too (a closed stream alone may leave it
 * up).
 */
const SERVICE_SIDE_ENDINGS = new Set([
  'agent_hangup',
  'max_duration_reached',
  'inactivity',
  'flow_error',
  'error_service',
  'insufficient_balance',
  'voicemail_reached',
]);

function hangUpServiceEndings(events: CallEvents, dialer: Dialer, logger: Logger): void {
  if (!dialer.hangUpCall) return;
  events.on('ended', ({ record }) => {
    if (
      record.call_type !== 'outbound' ||
      !record.disconnection_reason ||
      !SERVICE_SIDE_ENDINGS.has(record.disconnection_reason)
    )
      return;
    dialer.hangUpCall!(record.call_id).catch((error: unknown) =>
      logger.warn({ err: error, call_id: record.call_id }, 'hanging up the carrier call failed'),
    );
  });
}
