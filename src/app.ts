// Wires the service together: store, services, HTTP. main.ts runs it; tests start it on port 0.
import type { Logger } from 'pino';
import { join, resolve } from 'node:path';
import { readAgentsFile } from './agents/file.ts';
import { AgentService } from './agents/service.ts';
import { ApiKeyAuthenticator, loadOrCreateDefaultKey } from './auth/api-keys.ts';
import { CallEvents } from './calls/events.ts';
import { CallService } from './calls/service.ts';
import { cryptoRandomHex, systemClock, type Clock, type RandomHex } from './clock.ts';
import type { Config } from './config.ts';
import { CallRegistry } from './call/registry.ts';
import { NoCarrierDialer, type Dialer } from './dialer/dialer.ts';
import { CallOutcomes } from './dialer/outcomes.ts';
import { mediaStreamUrl, TwilioDialer } from './dialer/twilio.ts';
import { parseSimNumbers } from './carrier-sim/numbers.ts';
import { loadSimScript, type SimScript } from './carrier-sim/script.ts';
import { SimDialer } from './carrier-sim/sim-dialer.ts';
import { twilioStatusRoutes } from './http/routes/twilio-status.ts';
import { SqliteCarrierCallRepository } from './store/carrier-calls.ts';
import { CampaignScheduler } from './campaigns/scheduler.ts';
import { CampaignService } from './campaigns/service.ts';
import { agentRoutes } from './http/routes/agents.ts';
import { campaignRoutes } from './http/routes/campaigns.ts';
import { callRoutes } from './http/routes/calls.ts';
import { systemRoutes } from './http/routes/system.ts';
import { createHttpServer } from './http/server.ts';
import { createLogger } from './logger.ts';
import { SqliteAgentRepository } from './store/agents.ts';
import { SqliteCallRepository } from './store/calls.ts';
import { SqliteCampaignRepository } from './store/campaigns.ts';
import { openDatabase, type Db } from './store/database.ts';

export interface ServiceOptions {
  config: Config;
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
  scheduler: CampaignScheduler;
  /** The calls live in this process. */
  registry: CallRegistry;
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
  const agentRepo = new SqliteAgentRepository(db);
  const callRepo = new SqliteCallRepository(db);
  const agents = new AgentService(agentRepo, clock);
  const callEvents = new CallEvents();
  const registry = new CallRegistry();
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
  const calls = new CallService(callRepo, agents, dialer, clock, random, logger, callEvents);
  const outcomes = new CallOutcomes(calls, registry);
  outcomesRef = outcomes;
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

  const http = createHttpServer({
    logger,
    auth,
    clock,
    bodyLimitBytes: config.bodyLimitBytes,
    rateLimitPerMinute: config.rateLimitPerMinute,
  });
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
  callRoutes(http.app, calls);
  campaignRoutes(http.app, campaigns);
  twilioStatusRoutes(http.app, { outcomes, carrierCalls, authToken: config.twilioAuthToken, publicUrl: () => publicUrl });

  const address = await http.app.listen({ port: config.port, host: config.host });
  const url = address.replace('[::1]', '127.0.0.1');
  listenUrl = url;
  publicUrl ||= url;

  if (config.agentsFile) {
    const entries = readAgentsFile(resolve(config.agentsFile), publicUrl);
    for (const orgId of auth.organizations) agents.loadFromFile(orgId, entries);
    logger.info({ file: config.agentsFile, agents: entries.map((e) => e.agentId) }, 'agents loaded');
  }
  // Only once the server listens: simulated phones call back into its media endpoint.
  scheduler.start();

  return {
    url,
    publicUrl,
    db,
    logger,
    ...(generatedKey ? { generatedKey } : {}),
    beginShutdown: http.beginShutdown,
    scheduler,
    registry,
    dialer,
    outcomes,
    async close() {
      http.beginShutdown();
      scheduler.halt();
      if (dialer instanceof SimDialer) await dialer.close();
      await http.app.close();
      await scheduler.stop();
      db.close();
    },
  };
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
