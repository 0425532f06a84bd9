// Wires the service together: store, services, HTTP. main.ts runs it; tests start it on port 0.
import type { Logger } from 'pino';
import { join, resolve } from 'node:path';
import { readAgentsFile } from './agents/file.ts';
import { AgentService } from './agents/service.ts';
import { ApiKeyAuthenticator, loadOrCreateDefaultKey } from './auth/api-keys.ts';
import fastifyWebsocket from '@fastify/websocket';
import { CallManager, type SpeechEngineProvider } from './call/manager.ts';
import { OrgLimits } from './call/limits.ts';
import { CallRegistry } from './call/registry.ts';
import { realTimers, type Timers } from './call/timers.ts';
import { CallEvents } from './calls/events.ts';
import { demoRoutes } from './demo/routes.ts';
import { webCallRoutes } from './http/routes/web-calls.ts';
import { createEmbeddedSpeechEngines } from './speech/provider.ts';
import { SqliteCreditRepository } from './store/credits.ts';
import { twilioVoiceRoutes } from './telephony/twilio-voice.ts';
import { twilioMediaRoute } from './transports/twilio/route.ts';
import { webMediaRoute } from './transports/web/route.ts';
import { WebCallTokens } from './transports/web/tokens.ts';
import { CallService } from './calls/service.ts';
import { cryptoRandomHex, systemClock, type Clock, type RandomHex } from './clock.ts';
import type { Config } from './config.ts';
import { NoCarrierDialer, type Dialer } from './dialer/dialer.ts';
import { agentRoutes } from './http/routes/agents.ts';
import { callRoutes } from './http/routes/calls.ts';
import { systemRoutes } from './http/routes/system.ts';
import { webPageRoutes } from './http/routes/web-page.ts';
import { createHttpServer } from './http/server.ts';
import { createLogger } from './logger.ts';
import { SqliteAgentRepository } from './store/agents.ts';
import { SqliteCallRepository } from './store/calls.ts';
import { openDatabase, type Db } from './store/database.ts';

export interface ServiceOptions {
  config: Config;
  timers?: Timers;
  /** Speech engines; the embedded offline ones by default. */
  speech?: SpeechEngineProvider;
  logger?: Logger;
  clock?: Clock;
  random?: RandomHex;
  dialer?: Dialer;
}

export interface RunningService {
  /** The address the service listens on (http://host:port). */
  url: string;
  publicUrl: string;
  db: Db;
  logger: Logger;
  registry: CallRegistry;
  events: CallEvents;
  manager: CallManager;
  /** Set when API_KEYS was unset and a key was generated on this start. */
  generatedKey?: { key: string; file: string };
  /** From now on API requests and readiness answer 503. */
  beginShutdown(): void;
  /** Stop accepting requests (503), then close the server and the store. */
  close(): Promise<void>;
}

export async function startService(options: ServiceOptions): Promise<RunningService> {
  const { config } = options;
  const logger = options.logger ?? createLogger(config.logLevel);
  const clock = options.clock ?? systemClock;
  const random = options.random ?? cryptoRandomHex;

  const dataDir = resolve(config.dataDir);
  let keys = config.apiKeys;
  let generatedKey: RunningService['generatedKey'];
  if (keys.length === 0) {
    const { entry, created, file } = loadOrCreateDefaultKey(dataDir, random);
    keys = [entry];
    if (created) generatedKey = { key: entry.key, file };
    else logger.info({ file }, 'using the API key stored under DATA_DIR (API_KEYS is unset)');
  }
  const auth = new ApiKeyAuthenticator(keys);

  const db = openDatabase(join(dataDir, 'voicecall.db'));
  const timers = options.timers ?? realTimers;
  const agentRepo = new SqliteAgentRepository(db);
  const callRepo = new SqliteCallRepository(db);
  const agents = new AgentService(agentRepo, clock);
  const callEvents = new CallEvents();
  const registry = new CallRegistry();
  const limits = new OrgLimits(registry, new SqliteCreditRepository(db), {
    maxConcurrentCalls: config.maxConcurrentCalls,
    orgLimits: config.orgLimits,
    pricePerMinute: config.pricePerMinuteCredits,
    now: () => clock.now(),
  });
  const calls = new CallService(callRepo, agents, options.dialer ?? new NoCarrierDialer(), clock, random, logger, callEvents, (orgId) => limits.admission(orgId));
  recoverInterruptedCalls(callRepo, callEvents, clock, logger);

  const speech = options.speech ?? createEmbeddedSpeechEngines();
  let publicUrl = config.publicUrl ?? '';
  const manager = new CallManager({
    calls: callRepo,
    callService: calls,
    agents: agentRepo,
    events: callEvents,
    registry,
    limits,
    engines: speech,
    timers,
    log: logger,
    dataDir,
    publicUrl: () => publicUrl,
    pricePerMinute: config.pricePerMinuteCredits,
  });

  const http = createHttpServer({
    logger,
    auth,
    clock,
    bodyLimitBytes: config.bodyLimitBytes,
    rateLimitPerMinute: config.rateLimitPerMinute,
  });
  await http.app.register(fastifyWebsocket, { options: { maxPayload: 256 * 1024 } });
  systemRoutes(http.app, {
    openapi: http.openapi,
    publicUrl: () => publicUrl,
    ready: () => {
      if (http.shuttingDown) return { ok: false, details: 'shutting down' };
      try {
        db.prepare('SELECT 1').get();
        return { ok: true, details: '' };
      } catch (error) {
        return { ok: false, details: `store unavailable: ${(error as Error).message}` };
      }
    },
  });
  agentRoutes(http.app, agents, random);
  callRoutes(http.app, calls, (callId) => manager.recordingPath(callId));

  // A registered inbound or web call whose media never arrives must not stay registered.
  const awaitStream = (orgId: string, callId: string, reason: 'dial_failed' | 'dial_no_answer', message: string) => {
    timers.setTimeout(() => calls.endUnconnected(orgId, callId, 'not_connected', reason, message), config.streamConnectTimeoutMs);
  };
  const tokens = new WebCallTokens(timers, ({ orgId, callId }) =>
    calls.endUnconnected(orgId, callId, 'not_connected', 'dial_no_answer', 'The browser never opened the call within 60 seconds.'),
  );
  const accepting = () => !http.shuttingDown;
  webCallRoutes(http.app, { agents, calls, tokens, random, publicUrl: () => publicUrl });
  twilioVoiceRoutes(http.app, {
    agents: agentRepo,
    calls,
    authToken: config.twilioAuthToken,
    publicUrl: () => publicUrl,
    onRegistered: (orgId, callId) => awaitStream(orgId, callId, 'dial_failed', 'The carrier never opened the media stream.'),
  });
  twilioMediaRoute(http.app, { calls: callRepo, manager, log: logger, accepting });
  webMediaRoute(http.app, { tokens, manager, log: logger, accepting });
  // The demo model server and its booking tool: a peer the demo agent reaches over HTTP,
  // public like any customer's model server would be to this service.
  await http.app.register(async (scope) => {
    scope.addHook('onRoute', (route) => {
      route.config = { ...route.config, doc: { summary: `Demo peer: ${route.url}`, tag: 'demo', public: true } };
    });
    await scope.register(demoRoutes, { prefix: '/demo' });
  });
  // The browser call page (GET / and /web/*): public static files; it asks for the API key.
  webPageRoutes(http.app);

  const address = await http.app.listen({ port: config.port, host: config.host });
  const url = address.replace('[::1]', '127.0.0.1');
  publicUrl ||= url;

  if (config.agentsFile) {
    const entries = readAgentsFile(resolve(config.agentsFile), publicUrl);
    for (const orgId of auth.organizations) agents.loadFromFile(orgId, entries);
    logger.info({ file: config.agentsFile, agents: entries.map((e) => e.agentId) }, 'agents loaded');
  }

  let closing: Promise<void> | undefined;
  return {
    url,
    publicUrl,
    db,
    logger,
    registry,
    events: callEvents,
    manager,
    ...(generatedKey ? { generatedKey } : {}),
    beginShutdown: http.beginShutdown,
    close() {
      closing ??= (async () => {
        http.beginShutdown();
        // Calls under way may finish on their own for a while; then they are ended.
        const deadline = Date.now() + config.shutdownDrainMs;
        while (registry.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        for (const call of registry.all()) call.requestEnd('error_service', 'The service shut down during the call.');
        await Promise.all(registry.all().map((call) => call.finished));
        await Promise.race([manager.idle(), new Promise((r) => setTimeout(r, 5000))]);
        await http.app.close();
        if (!options.speech) await speech.close();
        db.close();
      })();
      return closing;
    },
  };
}

/** After a crash, calls the dead process was running are finalized, once, with error_service. */
function recoverInterruptedCalls(repo: SqliteCallRepository, events: CallEvents, clock: Clock, logger: Logger): void {
  for (const { orgId, record } of repo.listByStatus(['ongoing'])) {
    const now = clock.now();
    const ended = repo.update(orgId, record.call_id, (current) => {
      if (current.call_status !== 'ongoing') return current;
      const duration = current.start_timestamp === null ? 0 : Math.max(0, now - current.start_timestamp);
      return {
        ...current,
        call_status: 'error',
        disconnection_reason: 'error_service',
        disconnection_message: 'The service stopped during the call.',
        end_timestamp: now,
        duration_ms: duration,
      };
    });
    if (ended) events.emit('ended', { orgId, record: ended });
    logger.warn({ call_id: record.call_id }, 'call interrupted by a restart finalized with error_service');
  }
}
