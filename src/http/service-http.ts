// The http room, built from config: the fastify server with the JSON API, the carriers' webhooks,
// the media WebSockets, the demo peer and the browser call page.
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import fastifyWebsocket from '@fastify/websocket';
import type { Logger } from 'pino';
import type { AgentTestService } from '../agent-tests/service.ts';
import type { AgentRepository } from '../agents/repository.ts';
import type { AgentService } from '../agents/service.ts';
import type { ApiKeyAuthenticator } from '../auth/api-keys.ts';
import type { CallRuntime } from '../call/runtime.ts';
import type { CallRepository } from '../records/repository.ts';
import type { CampaignService } from '../campaigns/service.ts';
import type { CarrierCallRepository } from '../carriers/carrier-calls.ts';
import type { Carriers } from '../carriers/carriers.ts';
import type { CallOutcomes } from '../carriers/outcomes.ts';
import type { Clock, RandomHex } from '../clock.ts';
import type { Config } from '../config.ts';
import type { ProviderCredentialService } from '../credentials/service.ts';
import type { CarrierAccountService } from '../carrier-accounts/service.ts';
import { demoRoutes } from '../demo/routes.ts';
import type { IdempotencyStore } from '../store/idempotency.ts';
import type { RateWindowStore } from '../store/rate-windows.ts';
import type { Timers } from '../timers.ts';
import { PendingStreams } from '../carriers/pending-streams.ts';
import { webMediaRoute } from '../transports/web/route.ts';
import { WebCallTokens } from '../transports/web/tokens.ts';
import type { WebCallTokenRepository } from '../records/web-tokens.ts';
import { callOfRequest, FORWARDED_BY_HEADER, forwardToOwners } from './forward.ts';
import type { ServiceMetrics } from '../metrics/metrics.ts';
import { agentTestRoutes } from './routes/agent-tests.ts';
import { agentRoutes } from './routes/agents.ts';
import { callRoutes } from './routes/calls.ts';
import { listenRoute } from './routes/listen.ts';
import { metricsRoute } from './routes/metrics.ts';
import { providerCredentialRoutes } from './routes/provider-credentials.ts';
import { carrierAccountRoutes } from './routes/carrier-accounts.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import type { WebhookRepository } from '../webhooks/repository.ts';
import { campaignRoutes } from './routes/campaigns.ts';
import { systemRoutes } from './routes/system.ts';
import { webCallRoutes } from './routes/web-calls.ts';
import { webPageRoutes } from './routes/web-page.ts';
import { idempotentRoutes } from './idempotency.ts';
import { createHttpServer, type HttpServer } from './server.ts';
import { closeRefusedUpgrades } from './upgrades.ts';

export interface ServiceHttpDeps {
  auth: ApiKeyAuthenticator;
  agents: AgentService;
  agentRepo: AgentRepository;
  callRepo: CallRepository;
  calls: CallRuntime;
  campaigns: CampaignService;
  agentTests: AgentTestService;
  providerCredentials: ProviderCredentialService;
  carrierAccounts: CarrierAccountService;
  outcomes: CallOutcomes;
  /** Their webhooks and media routes are mounted here. */
  carriers: Pick<Carriers, 'mount'>;
  carrierCalls: CarrierCallRepository;
  idempotency: IdempotencyStore;
  rateWindows: RateWindowStore;
  /** null when the store answers, else why not (readiness). */
  storeProblem: () => Promise<string | null>;
  timers: Timers;
  clock: Clock;
  random: RandomHex;
  logger: Logger;
  publicUrl: () => string;
  webhooks: WebhookRepository;
  /** Why the egress policy refuses a URL outright (a literal internal address), or null. */
  egressRefusal: (url: string) => string | null;
  /** Present when config.metrics serves GET /metrics. */
  metrics?: ServiceMetrics | undefined;
  webCallTokens: WebCallTokenRepository;
}

export interface ServiceHttp extends Pick<HttpServer, 'app' | 'beginShutdown' | 'shuttingDown'> {
  /** Starts listening; resolves with the address (http://host:port) and the one peers reach this process at. */
  listen(): Promise<{ url: string; peerUrl: string }>;
  close(): Promise<void>;
}

export async function createServiceHttp(config: Config, deps: ServiceHttpDeps): Promise<ServiceHttp> {
  const { calls, logger, publicUrl } = deps;
  /** Connections that came in through the peer listener (other nodes of this service). */
  const peerSockets = new WeakSet<Socket>();
  const http = createHttpServer({
    logger,
    auth: deps.auth,
    clock: deps.clock,
    bodyLimitBytes: config.bodyLimitBytes,
    rateLimitPerMinute: config.rateLimitPerMinute,
    rateWindows: deps.rateWindows,
    requestTimeoutMs: config.requestTimeoutMs,
    trustProxy: config.trustProxy,
    // Only a connection to the peer listener is a peer's: the header alone anyone could send.
    countedByPeer: (request) =>
      request.headers[FORWARDED_BY_HEADER] !== undefined && peerSockets.has(request.raw.socket),
  });
  const { app } = http;
  await app.register(fastifyWebsocket, {
    options: { maxPayload: 256 * 1024 },
    // A frame ws refuses (not UTF-8, over maxPayload) or a dropped connection is the peer's doing and
    // anyone can cause it: not worth an error line with a stack. The socket is closed either way.
    errorHandler: (error, socket, request) => {
      const peer = /^(WS_ERR_|ECONNRESET$|EPIPE$)/.test((error as Error & { code?: string }).code ?? '');
      if (peer) request.log.debug({ err: error }, 'media socket closed on a protocol error');
      else request.log.error({ err: error }, 'media socket handler failed');
      socket.terminate();
    },
  });
  closeRefusedUpgrades(app);
  const forward = { nodeId: calls.nodeId, ownerUrl: (callId: string) => calls.ownerUrl(callId) };
  const peers = forwardToOwners(app, forward);
  idempotentRoutes(app, deps.idempotency, deps.clock);
  systemRoutes(app, {
    openapi: http.openapi,
    publicUrl,
    ready: async () => {
      if (http.shuttingDown) return { ok: false, details: 'shutting down' };
      const problem = await deps.storeProblem();
      return problem ? { ok: false, details: problem } : { ok: true, details: '' };
    },
  });
  if (config.metrics && deps.metrics) metricsRoute(app, deps.metrics, config.metrics);
  agentRoutes(app, deps.agents, deps.random);
  providerCredentialRoutes(app, deps.providerCredentials);
  carrierAccountRoutes(app, deps.carrierAccounts);
  callRoutes(app, calls.service, calls.control, (callId) => calls.manager.recordingPath(callId));
  listenRoute(app, calls.control, forward);
  campaignRoutes(app, deps.campaigns);
  agentTestRoutes(app, deps.agentTests);
  webhookRoutes(app, { repo: deps.webhooks, clock: deps.clock, refusal: deps.egressRefusal });
  const tokens = new WebCallTokens(deps.webCallTokens, deps.timers, ({ orgId, callId }) =>
    calls.service.endUnconnected(
      orgId,
      callId,
      'not_connected',
      'dial_no_answer',
      'The browser never opened the call within 60 seconds.',
    ),
  );
  const accepting = () => !http.shuttingDown;
  webCallRoutes(app, { agents: deps.agents, calls: calls.service, tokens, random: deps.random, publicUrl });
  const pending = new PendingStreams();
  const onFrameDropped = deps.metrics ? () => deps.metrics?.outboundFrameDropped() : undefined;
  deps.carriers.mount(app, {
    agents: deps.agentRepo,
    calls: calls.service,
    callRepo: deps.callRepo,
    manager: calls.manager,
    outcomes: deps.outcomes,
    carrierCalls: deps.carrierCalls,
    answers: deps.idempotency,
    clock: deps.clock,
    log: logger,
    publicUrl,
    callOf: callOfRequest,
    awaitStream: (orgId, callId) =>
      calls.streams.await(orgId, callId, 'dial_failed', 'The carrier never opened the media stream.'),
    accepting,
    pending,
    onFrameDropped,
  });
  webMediaRoute(app, { tokens, manager: calls.manager, log: logger, accepting, pending, onFrameDropped });
  // The demo model server and its booking tool: a peer the demo agent reaches over HTTP,
  // public like any customer's model server would be to this service. DEMO=off unmounts it.
  if (config.demo) {
    await app.register(async (scope) => {
      scope.addHook('onRoute', (route) => {
        route.config = { ...route.config, doc: { summary: `Demo peer: ${route.url}`, tag: 'demo', public: true } };
      });
      await scope.register(demoRoutes, { prefix: '/demo' });
    });
  }
  // The browser call page (GET / and /web/*): public static files; it asks for the API key.
  webPageRoutes(app);

  // The peer listener hands its connections to the same server: one app, two doors.
  let peerServer: Server | undefined;
  return {
    app,
    beginShutdown: http.beginShutdown,
    get shuttingDown() {
      return http.shuttingDown;
    },
    async listen() {
      const address = await app.listen({ port: config.port, host: config.host });
      const peer = createServer((socket) => {
        peerSockets.add(socket);
        app.server.emit('connection', socket);
      });
      peerServer = peer;
      await new Promise<void>((resolve, reject) => {
        peer.once('error', reject);
        // exclusive: a cluster worker would otherwise share one peer port with the other workers.
        peer.listen({ port: config.peer.port, host: config.peer.host, exclusive: true }, () => resolve());
      });
      const peerPort = (peer.address() as AddressInfo).port;
      return {
        url: address.replace('[::1]', '127.0.0.1'),
        peerUrl: `http://${config.peer.address.includes(':') ? `[${config.peer.address}]` : config.peer.address}:${peerPort}`,
      };
    },
    async close() {
      peerServer?.close();
      await app.close();
      await peers.close();
      tokens.close();
    },
  };
}
