// Wires the service together: store, services, HTTP. main.ts runs it; tests start it on port 0.
import type { Logger } from 'pino';
import { join, resolve } from 'node:path';
import { readAgentsFile } from './agents/file.ts';
import { AgentService } from './agents/service.ts';
import { ApiKeyAuthenticator, loadOrCreateDefaultKey } from './auth/api-keys.ts';
import fastifyWebsocket from '@fastify/websocket';
import { CallManager } from './call/manager.ts';
import { OrgLimits } from './call/limits.ts';
import { CallRegistry } from './call/registry.ts';
import { realTimers, type TimerHandle, type Timers } from './timers.ts';
import { CallEvents } from './calls/events.ts';
import { demoRoutes } from './demo/routes.ts';
import { webCallRoutes } from './http/routes/web-calls.ts';
import { createEmbeddedSpeechEngines } from './speech/provider.ts';
import type { SpeechEngineProvider } from './speech/types.ts';
import { SqliteCreditRepository } from './store/credits.ts';
import { twilioVoiceRoutes } from './telephony/twilio-voice.ts';
import { twilioMediaRoute } from './transports/twilio/route.ts';
import { webMediaRoute } from './transports/web/route.ts';
import { WebCallTokens } from './transports/web/tokens.ts';
import { CallService } from './calls/service.ts';
import { cryptoRandomHex, systemClock, type Clock, type RandomHex } from './clock.ts';
import type { Config } from './config.ts';
import { NoCarrierDialer, type Dialer } from './dialer/dialer.ts';
import { CallOutcomes } from './dialer/outcomes.ts';
import { mediaStreamUrl, TwilioDialer } from './dialer/twilio.ts';
import { parseSimNumbers } from './carrier-sim/numbers.ts';
import { loadSimScript, type SimScript } from './carrier-sim/script.ts';
import { SimDialer } from './carrier-sim/sim-dialer.ts';
import { CampaignScheduler } from './campaigns/scheduler.ts';
import { CampaignService } from './campaigns/service.ts';
import { campaignRoutes } from './http/routes/campaigns.ts';
import { twilioStatusRoutes } from './http/routes/twilio-status.ts';
import { SqliteCampaignRepository } from './store/campaigns.ts';
import { SqliteCarrierCallRepository } from './store/carrier-calls.ts';
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
  /** Warm the embedded default voice at start-up (npm start does; tests leave it off). */
  warmSpeech?: boolean;
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
  scheduler: CampaignScheduler;
  /** Places outbound calls; hangUpCall ends the carrier side (agent_hangup). */
  dialer: Dialer;
  outcomes: CallOutcomes;
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
  const carrierCalls = new SqliteCarrierCallRepository(db);
  // PUBLIC_URL, or the listening address once known: carriers call back to it.
  let publicUrl = config.publicUrl ?? '';
  let listenUrl = '';
  let outcomesRef: CallOutcomes | undefined;
  const dialer =
    options.dialer ??
    (await chooseDialer(config, {
      publicUrl: () => publicUrl,
      mediaUrl: () => mediaStreamUrl(listenUrl),
      outcomes: () => outcomesRef!,
      carrierCalls,
      clock,
      logger,
    }));
  const calls = new CallService(callRepo, agents, dialer, clock, random, logger, callEvents, (orgId) => limits.admission(orgId));
  const outcomes = new CallOutcomes(calls, registry);
  outcomesRef = outcomes;
  hangUpCarrierSide(callEvents, dialer, logger);
  recoverInterruptedCalls(callRepo, callEvents, clock, logger);
  const campaignRepo = new SqliteCampaignRepository(db);
  const scheduler = new CampaignScheduler({
    repo: campaignRepo,
    calls,
    events: callEvents,
    clock,
    random,
    log: logger.child({ component: 'scheduler' }),
    pollMs: config.schedulerPollMs,
    leaseMs: config.schedulerLeaseMs,
  });
  const campaigns = new CampaignService(campaignRepo, agents, clock, random, { maxTasks: config.maxTasks, batchConcurrency: config.batchConcurrency }, () =>
    scheduler.kick(),
  );

  const speech = options.speech ?? createEmbeddedSpeechEngines({ warm: options.warmSpeech ?? false });
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
  campaignRoutes(http.app, campaigns);
  twilioStatusRoutes(http.app, { outcomes, carrierCalls, authToken: config.twilioAuthToken, publicUrl: () => publicUrl });

  // A registered inbound or web call whose media never arrives must not stay registered.
  const streamDeadlines = new Map<string, TimerHandle>();
  const awaitStream = (orgId: string, callId: string, reason: 'dial_failed' | 'dial_no_answer', message: string) => {
    const handle = timers.setTimeout(() => {
      streamDeadlines.delete(callId);
      calls.endUnconnected(orgId, callId, 'not_connected', reason, message);
    }, config.streamConnectTimeoutMs);
    streamDeadlines.set(callId, handle);
  };
  callEvents.on('started', ({ record }) => {
    timers.clearTimeout(streamDeadlines.get(record.call_id));
    streamDeadlines.delete(record.call_id);
  });
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
  listenUrl = url;

  if (config.agentsFile) {
    const entries = readAgentsFile(resolve(config.agentsFile), publicUrl);
    for (const orgId of auth.organizations) agents.loadFromFile(orgId, entries);
    logger.info({ file: config.agentsFile, agents: entries.map((e) => e.agentId) }, 'agents loaded');
  }
  // Only once the server listens: simulated phones call back into its media endpoint.
  scheduler.start();

  let closing: Promise<void> | undefined;
  return {
    url,
    publicUrl,
    db,
    logger,
    registry,
    events: callEvents,
    manager,
    scheduler,
    dialer,
    outcomes,
    ...(generatedKey ? { generatedKey } : {}),
    beginShutdown: http.beginShutdown,
    close() {
      closing ??= (async () => {
        http.beginShutdown();
        scheduler.halt();
        // Calls under way may finish on their own for a while; then they are ended.
        const deadline = Date.now() + config.shutdownDrainMs;
        while (registry.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        for (const call of registry.all()) call.requestEnd('error_service', 'The service shut down during the call.');
        await Promise.all(registry.all().map((call) => call.finished));
        await Promise.race([manager.idle(), new Promise((r) => setTimeout(r, 5000))]);
        if (dialer instanceof SimDialer) await dialer.close();
        await http.app.close();
        await scheduler.stop();
        // No timer may touch the store once it is closed.
        for (const handle of streamDeadlines.values()) timers.clearTimeout(handle);
        streamDeadlines.clear();
        tokens.close();
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

/**
 * Twilio when its credentials are set, else no carrier (every outbound call fails with a readable
 * reason); SIM_NUMBERS puts simulated phones in front of either.
 */
async function chooseDialer(
  config: Config,
  deps: {
    publicUrl: () => string;
    mediaUrl: () => string;
    outcomes: () => CallOutcomes;
    carrierCalls: SqliteCarrierCallRepository;
    clock: Clock;
    logger: Logger;
  },
): Promise<Dialer> {
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
    outcomes: deps.outcomes,
    ringTimeoutMs: config.ringTimeoutMs,
    answerDelayMs: config.simAnswerDelayMs,
    fallback: carrier,
    log: deps.logger.child({ component: 'sim-phones' }),
  });
}

/** Endings the carrier did not cause: the carrier leg is hung up through its API too (a closed stream alone may leave it up). */
const SERVICE_SIDE_ENDINGS = new Set(['agent_hangup', 'max_duration_reached', 'inactivity', 'flow_error', 'error_service', 'insufficient_balance', 'voicemail_reached']);

function hangUpCarrierSide(events: CallEvents, dialer: Dialer, logger: Logger): void {
  if (!dialer.hangUpCall) return;
  events.on('ended', ({ record }) => {
    if (record.call_type !== 'outbound' || !record.disconnection_reason || !SERVICE_SIDE_ENDINGS.has(record.disconnection_reason)) return;
    dialer.hangUpCall!(record.call_id).catch((error: unknown) => logger.warn({ err: error, call_id: record.call_id }, 'hanging up the carrier call failed'));
  });
}
