// The calls room, built from config: call records (registration, ending, recovery with node leases),
// organization limits, the calls running in this process, and the manager that runs a session
// on each media stream that connects.
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { AgentRepository } from '../agents/repository.ts';
import type { CredentialLookup } from '../agents/credentials.ts';
import type { AgentService } from '../agents/service.ts';
import type { Dialer } from '../records/dialer.ts';
import { CallEvents } from '../records/events.ts';
import type { NodeLeases } from '../records/nodes.ts';
import type { CallRepository } from '../records/repository.ts';
import { CallService } from '../records/service.ts';
import { StreamDeadlines } from '../records/stream-deadlines.ts';
import type { Clock, RandomHex } from '../clock.ts';
import type { Config } from '../config.ts';
import type { OutboundHttp } from '../net/http.ts';
import type { SpeechEngineProvider } from '../speech/types.ts';
import type { TimerHandle, Timers } from '../timers.ts';
import { OrgLimits, type CreditRepository } from './limits.ts';
import { CallManager } from './manager.ts';
import { recoverOrphanedCalls, type RecoveryDeps } from './recovery.ts';
import { CallControl } from './control.ts';
import { CallRegistry } from './registry.ts';

export interface CallRuntimeDeps {
  agents: AgentService;
  agentRepo: AgentRepository;
  callRepo: CallRepository;
  nodes: NodeLeases;
  credits: CreditRepository;
  /** The organization's provider credentials by name, resolved into a call's engines when it starts. */
  credentials?: CredentialLookup;
  speech: SpeechEngineProvider;
  dialer: Dialer;
  timers: Timers;
  clock: Clock;
  random: RandomHex;
  logger: Logger;
  dataDir: string;
  publicUrl: () => string;
  /** Where peers reach this node (its peer listener), once it listens. */
  nodeUrl: () => string | null;
  outbound: OutboundHttp;
}

export interface CallRuntime {
  service: CallService;
  events: CallEvents;
  registry: CallRegistry;
  manager: CallManager;
  /** Live control of calls under way, and record changes, through the API. */
  control: CallControl;
  /** Registered calls waiting for their media stream. */
  streams: StreamDeadlines;
  nodeId: string;
  /**
   * Where a request about this call must go when another live node runs it (its media reached
   * that node); null when the call runs here, is not under way, or its node is gone.
   */
  ownerUrl(callId: string): Promise<string | null>;
  /**
   * Once, at start (after the service listens: recordings are linked by its address): what this
   * node's previous run and dead peers left is put right; then the node keeps its lease in the
   * store and finishes the calls of any peer whose lease runs out.
   */
  recover(): Promise<void>;
  /** Runs after each later heartbeat with the live nodes (this one among them): work of dead peers to put right. */
  afterHeartbeat(work: (liveNodes: string[]) => Promise<void>): void;
  /** Stops renewing the lease and gives it up (after the drain: this node's calls are final). */
  leave(): Promise<void>;
  /**
   * On shutdown: calls under way may go on for `drainMs`, then the rest are ended with
   * error_service; resolves once every record is final and post-call work is done or 5 s passed.
   */
  drain(drainMs: number): Promise<void>;
}

/** How a call ends when its node finds a peer took it for dead. */
export const LEASE_TAKEN_OVER_MESSAGE =
  'The service node running the call stalled past its lease and was taken for dead; the call was ended.';

export function createCallRuntime(config: Config, deps: CallRuntimeDeps): CallRuntime {
  const events = new CallEvents();
  const registry = new CallRegistry();
  const nodeId = config.nodeId;
  const limits = new OrgLimits(
    { credits: deps.credits, calls: deps.callRepo },
    {
      maxConcurrentCalls: config.maxConcurrentCalls,
      orgLimits: config.orgLimits,
      pricePerMinute: config.pricePerMinuteCredits,
      now: () => deps.clock.now(),
    },
  );
  const service = new CallService(
    deps.callRepo,
    deps.agents,
    deps.dialer,
    deps.clock,
    deps.random,
    deps.logger,
    events,
    limits,
    nodeId,
  );
  const manager = new CallManager({
    calls: deps.callRepo,
    callService: service,
    agents: deps.agentRepo,
    events,
    registry,
    limits,
    credentials: deps.credentials,
    engines: deps.speech,
    timers: deps.timers,
    log: deps.logger,
    dataDir: deps.dataDir,
    publicUrl: deps.publicUrl,
    pricePerMinute: config.pricePerMinuteCredits,
    outbound: deps.outbound,
    dialer: deps.dialer,
    random: deps.random,
    nodeId,
  });
  const streams = new StreamDeadlines(deps.timers, service, events, config.streamConnectTimeoutMs, (error, callId) =>
    deps.logger.error({ err: error, call_id: callId }, 'a call whose stream never came could not be ended'),
  );
  const control = new CallControl({
    calls: deps.callRepo,
    registry,
    recordingPath: (callId) => manager.recordingPath(callId),
  });
  const recovery: RecoveryDeps = {
    calls: deps.callRepo,
    service,
    events,
    limits,
    clock: deps.clock,
    log: deps.logger,
    recordingsDir: join(deps.dataDir, 'recordings'),
    recordingUrl: (callId) => manager.recordingUrl(callId),
    pricePerMinute: config.pricePerMinuteCredits,
  };
  let nextBeat: TimerHandle | undefined;
  /** The beat under way, if any: leaving waits for it, so no lease is renewed after it was given up. */
  let beating: Promise<void> = Promise.resolve();
  const heartbeatWork: ((liveNodes: string[]) => Promise<void>)[] = [];
  let leaving = false;
  /** The fencing token of this node's lease (records/nodes.ts): new each time the lease is taken. */
  let epoch = deps.random(8);
  // Renewed three times a lease: a node is taken for dead only after missing three beats in a row.
  const heartbeat = async (atStart: boolean): Promise<void> => {
    if (leaving) return;
    const now = deps.clock.now();
    try {
      const until = now + config.nodeLeaseMs;
      // At start the lease is taken under a new epoch: this node id's calls from its previous run are
      // then no longer owned (it is this process that restarted), and are finished below.
      if (atStart) await deps.nodes.acquire(nodeId, epoch, now, until, deps.nodeUrl());
      else if (!(await deps.nodes.renew(nodeId, epoch, now, until, deps.nodeUrl()))) await leaseTakenOver(now, until);
      // Leases that ran out are taken over before their calls are finished: a stalled holder can no
      // longer renew one, so it never goes on serving a call a peer has finished (it learns at its next beat).
      const forgotten = await deps.nodes.forgetExpired(now);
      if (forgotten > 0)
        deps.logger.warn(
          { node_id: nodeId, nodes: forgotten },
          'peer nodes whose lease ran out taken over, their calls finished',
        );
      // Nothing was registered here yet at start (no request is served before the first beat).
      const live = (await deps.nodes.alive(now)).filter((id) => !atStart || id !== nodeId);
      await recoverOrphanedCalls(recovery, live, atStart);
      if (!atStart) for (const work of heartbeatWork) await work(live);
    } catch (error) {
      // A store that fails at start fails the start; later, the next beat tries again.
      if (atStart) throw error;
      deps.logger.error({ err: error, node_id: nodeId }, 'node heartbeat failed');
    }
    if (!leaving) nextBeat = deps.timers.setTimeout(() => (beating = heartbeat(false)), config.nodeLeaseMs / 3);
  };
  /**
   * This node stalled past its lease (a long pause, a starved machine) and a peer took it over: the
   * peer may have finished any of its calls. It takes a new lease and ends every call it still
   * serves, so no caller is served on a record that says the call ended; a record a peer finished
   * stands (the session's final write leaves a final record alone).
   */
  const leaseTakenOver = async (now: number, until: number): Promise<void> => {
    epoch = deps.random(8);
    await deps.nodes.acquire(nodeId, epoch, now, until, deps.nodeUrl());
    const serving = registry.all();
    deps.logger.error(
      { node_id: nodeId, calls: serving.length },
      'node lease was taken over by a peer while this process stalled; its calls end',
    );
    for (const call of serving) call.requestEnd('error_service', LEASE_TAKEN_OVER_MESSAGE, { now: true });
  };
  return {
    service,
    events,
    registry,
    manager,
    control,
    streams,
    nodeId,
    async ownerUrl(callId) {
      if (registry.get(callId)) return null;
      const owner = await deps.callRepo.ownerOf(callId);
      return owner && owner !== nodeId ? deps.nodes.urlOf(owner, deps.clock.now()) : null;
    },
    afterHeartbeat(work) {
      heartbeatWork.push(work);
    },
    async recover() {
      await limits.initialize();
      await heartbeat(true);
    },
    async leave() {
      leaving = true;
      deps.timers.clearTimeout(nextBeat);
      await beating;
      try {
        await deps.nodes.release(nodeId, epoch);
      } catch (error) {
        // Shutting down must go on: a lease not given up just runs out.
        deps.logger.warn({ err: error, node_id: nodeId }, 'node lease could not be given up; it will run out');
      }
    },
    async drain(drainMs) {
      const deadline = Date.now() + drainMs;
      while (registry.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      for (const call of registry.all()) call.requestEnd('error_service', 'The service shut down during the call.');
      await Promise.all(registry.all().map((call) => call.finished));
      await Promise.race([manager.idle(), new Promise((r) => setTimeout(r, 5000))]);
    },
  };
}
