// The calls room, built from config: call records (registration, ending, start-up recovery),
// organization limits, the calls running in this process, and the manager that runs a session
// on each media stream that connects.
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { AgentRepository } from '../agents/repository.ts';
import type { AgentService } from '../agents/service.ts';
import type { Dialer } from '../calls/dialer.ts';
import { CallEvents } from '../calls/events.ts';
import type { CallRepository } from '../calls/repository.ts';
import { CallService } from '../calls/service.ts';
import { StreamDeadlines } from '../calls/stream-deadlines.ts';
import type { Clock, RandomHex } from '../clock.ts';
import type { Config } from '../config.ts';
import type { OutboundHttp } from '../net/http.ts';
import type { SpeechEngineProvider } from '../speech/types.ts';
import type { Timers } from '../timers.ts';
import { OrgLimits, type CreditRepository } from './limits.ts';
import { CallManager } from './manager.ts';
import { recoverAfterRestart } from './recovery.ts';
import { CallControl } from './control.ts';
import { CallRegistry } from './registry.ts';

export interface CallRuntimeDeps {
  agents: AgentService;
  agentRepo: AgentRepository;
  callRepo: CallRepository;
  credits: CreditRepository;
  speech: SpeechEngineProvider;
  dialer: Dialer;
  timers: Timers;
  clock: Clock;
  random: RandomHex;
  logger: Logger;
  dataDir: string;
  publicUrl: () => string;
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
  /** Once, at start (after the service listens: recordings are linked by its address): what a dead process left is put right. */
  recover(): void;
  /**
   * On shutdown: calls under way may go on for `drainMs`, then the rest are ended with
   * error_service; resolves once every record is final and post-call work is done or 5 s passed.
   */
  drain(drainMs: number): Promise<void>;
}

export function createCallRuntime(config: Config, deps: CallRuntimeDeps): CallRuntime {
  const events = new CallEvents();
  const registry = new CallRegistry();
  const limits = new OrgLimits(
    { registry, credits: deps.credits, events, calls: deps.callRepo },
    {
      maxConcurrentCalls: config.maxConcurrentCalls,
      orgLimits: config.orgLimits,
      pricePerMinute: config.pricePerMinuteCredits,
      now: () => deps.clock.now(),
    },
  );
  const service = new CallService(deps.callRepo, deps.agents, deps.dialer, deps.clock, deps.random, deps.logger, events, limits);
  const manager = new CallManager({
    calls: deps.callRepo,
    callService: service,
    agents: deps.agentRepo,
    events,
    registry,
    limits,
    engines: deps.speech,
    timers: deps.timers,
    log: deps.logger,
    dataDir: deps.dataDir,
    publicUrl: deps.publicUrl,
    pricePerMinute: config.pricePerMinuteCredits,
    outbound: deps.outbound,
    dialer: deps.dialer,
    random: deps.random,
  });
  const streams = new StreamDeadlines(deps.timers, service, events, config.streamConnectTimeoutMs);
  const control = new CallControl({ calls: deps.callRepo, registry, recordingPath: (callId) => manager.recordingPath(callId) });
  return {
    service,
    events,
    registry,
    manager,
    control,
    streams,
    recover: () =>
      recoverAfterRestart({
        calls: deps.callRepo,
        service,
        events,
        limits,
        clock: deps.clock,
        log: deps.logger,
        recordingsDir: join(deps.dataDir, 'recordings'),
        recordingUrl: (callId) => manager.recordingUrl(callId),
        pricePerMinute: config.pricePerMinuteCredits,
      }),
    async drain(drainMs) {
      const deadline = Date.now() + drainMs;
      while (registry.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      for (const call of registry.all()) call.requestEnd('error_service', 'The service shut down during the call.');
      await Promise.all(registry.all().map((call) => call.finished));
      await Promise.race([manager.idle(), new Promise((r) => setTimeout(r, 5000))]);
    },
  };
}
