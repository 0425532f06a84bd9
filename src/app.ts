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
  const calls = new CallService(callRepo, agents, options.dialer ?? new NoCarrierDialer(), clock, random, logger, callEvents);

  const http = createHttpServer({
    logger,
    auth,
    clock,
    bodyLimitBytes: config.bodyLimitBytes,
    rateLimitPerMinute: config.rateLimitPerMinute,
  });
  let publicUrl = config.publicUrl ?? '';
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

  return {
    url,
    publicUrl,
    db,
    logger,
    ...(generatedKey ? { generatedKey } : {}),
    beginShutdown: http.beginShutdown,
    async close() {
      http.beginShutdown();
      await http.app.close();
      db.close();
    },
  };
}
