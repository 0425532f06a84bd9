// What one carrier is. A carrier is one folder under carriers/ (twilio/, sim/) holding everything
// of it — its webhooks and their signature, its answer markup, its media transport, its dialer and
// call control — and exporting one CarrierDefinition; registry.ts lists the definitions, one line
// each. What carriers share (pacing of inbound audio, waiting streams, the outcomes a carrier
// reports, the carrier call ids) stays in this folder, beside this file.
import type { EgressPolicy } from '../net/egress.ts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { AgentRepository } from '../agents/repository.ts';
import type { CallManager } from '../call/manager.ts';
import type { CallRegistry } from '../call/registry.ts';
import type { Dialer } from '../records/dialer.ts';
import type { CallRepository } from '../records/repository.ts';
import type { CallService } from '../records/service.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Dispatcher } from '../net/http.ts';
import type { CarrierAccountRepository } from '../carrier-accounts/repository.ts';
import type { SipTrunkRepository } from '../sip-trunks/repository.ts';
import type { CarrierCallRepository } from './carrier-calls.ts';
import type { CallOutcomes } from './outcomes.ts';
import type { PendingStreams } from './pending-streams.ts';

/**
 * One carrier as configured. Its call control is a Dialer (records/dialer.ts): dial and showsCallerId
 * always; hang up, cold transfer (transfer), warm transfer (consult, bridge) and send digits are
 * optional members there, present only when the carrier can.
 */
export interface Carrier {
  readonly name: string;
  /** Places and controls calls; absent when this carrier, as configured, places none (inbound only). */
  readonly dialer?: Dialer | undefined;
  /**
   * Its own HTTP surface on the service's server: the inbound call's answer, call progress
   * callbacks, the media stream route. Absent when it has none (the simulated phones open
   * Twilio's media route, as Twilio would).
   */
  mount?(app: FastifyInstance, http: CarrierHttp): void;
  /** Stops what it runs (simulated phones on the line). */
  close?(): Promise<void>;
}

export interface CarrierDefinition {
  readonly name: string;
  /** The carrier as config sets it up, or undefined when config leaves it off. */
  create(setup: CarrierSetup): Promise<Carrier | undefined>;
}

/** What every carrier is built from. */
export interface CarrierSetup {
  config: Config;
  /** The service's public address (PUBLIC_URL, or the listening one once known): carriers call back to it. */
  publicUrl: () => string;
  /** Where this process is reached by its peers and its own simulated phones (known once it listens). */
  peerUrl: () => string;
  carrierCalls: CarrierCallRepository;
  /** The organizations' own carrier accounts, found by number or id (carrier-accounts/). */
  carrierAccounts: CarrierAccountLookup;
  /** The organizations' SIP trunks, found by number (sip-trunks/). */
  sipTrunks: SipTrunkLookup;
  /** Where carrier reports land; set once the calls room exists (it needs the dialers first). */
  outcomes: () => CallOutcomes;
  /** The live calls, likewise set once the calls room exists. */
  registry: () => CallRegistry | undefined;
  clock: Clock;
  logger: Logger;
  /** The outbound layer's guarded pool for carriers' REST requests (net/http.ts); absent in tests that send none. */
  dispatcher: Dispatcher | undefined;
  /**
   * The egress policy (net/egress.ts) for what carriers reach other than through `dispatcher`: a SIP trunk's address
   * is an organization's setting like a tool's URL. Absent: internal addresses are refused, as with no EGRESS_ALLOW.
   */
  egress: EgressPolicy | undefined;
  /**
   * The carriers registered after this one, as one dialer (or one that refuses every call): a
   * carrier that serves only some numbers passes the others on to it.
   */
  next: Dialer;
}

/** What a carrier reads of the organizations' carrier accounts. */
export type CarrierAccountLookup = Pick<CarrierAccountRepository, 'byNumber' | 'find'>;

/** What the SIP carrier reads of the organizations' trunks. */
export type SipTrunkLookup = Pick<SipTrunkRepository, 'byNumber' | 'anyWithCredentials'>;

/** What the http room gives each carrier's routes. */
export interface CarrierHttp {
  agents: AgentRepository;
  calls: CallService;
  callRepo: CallRepository;
  manager: CallManager;
  outcomes: CallOutcomes;
  carrierCalls: CarrierCallRepository;
  /** The first answer to each carrier request id, so a webhook sent again is answered the same. */
  answers: CarrierAnswers;
  clock: Clock;
  log: Logger;
  publicUrl: () => string;
  /** The call a request is about, as its route's `callOf` finds it (the http room's forwarding reads it too). */
  callOf: (request: FastifyRequest) => Promise<string | undefined>;
  /** An inbound call was registered: its media stream must arrive in time or the call ends. */
  awaitStream: (orgId: string, callId: string) => void;
  /** Media sockets: whether new ones are taken (not while shutting down), and how many may wait for their start. */
  accepting: () => boolean;
  pending: PendingStreams;
  /** An agent frame could not go out (counted for metrics). */
  onFrameDropped?: (() => void) | undefined;
}

/**
 * Where the first answer to each carrier request id is kept (the store's idempotency keys implement
 * it; declared here so carriers need nothing from the store).
 */
export interface CarrierAnswers {
  claim(
    namespace: string,
    key: string,
    fingerprint: string,
    now: number,
  ): Promise<
    { kind: 'claimed' } | { kind: 'replay'; answer: { body: string } } | { kind: 'mismatch' } | { kind: 'in_progress' }
  >;
  finish(namespace: string, key: string, answer: { status: number; body: string }): Promise<void>;
  release(namespace: string, key: string): Promise<void>;
}

/** What every carrier's inbound voice webhook takes of the http room (beside its own accounts). */
export function inboundRouteDeps(http: CarrierHttp) {
  return {
    agents: http.agents,
    calls: http.calls,
    carrierCalls: http.carrierCalls,
    publicUrl: http.publicUrl,
    answers: http.answers,
    clock: http.clock,
    onRegistered: http.awaitStream,
  };
}

/** What every carrier's media stream route takes of the http room. */
export function mediaRouteDeps(http: CarrierHttp) {
  return {
    calls: http.callRepo,
    manager: http.manager,
    log: http.log,
    accepting: http.accepting,
    pending: http.pending,
    onFrameDropped: http.onFrameDropped,
  };
}
