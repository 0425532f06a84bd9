// The composition root: each room builds its own parts from config, in dependency order; main.ts
// runs the service, tests and benches start it on port 0.
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import { modelJudge } from './agent-tests/expectations.ts';
import { TestRunner } from './agent-tests/runner.ts';
import { AgentTestService } from './agent-tests/service.ts';
import { readAgentsFile } from './agents/file.ts';
import { AgentService } from './agents/service.ts';
import { createAuthenticator } from './auth/api-keys.ts';
import type { CredentialLookup } from './agents/credentials.ts';
import { ProviderCredentialService } from './credentials/service.ts';
import { CarrierAccountService } from './carrier-accounts/service.ts';
import { plivoAccountCheck } from './carriers/plivo/account-check.ts';
import { telnyxAccountCheck } from './carriers/telnyx/account-check.ts';
import { vonageAccountCheck } from './carriers/vonage/account-check.ts';
import { signalwireAccountCheck } from './carriers/signalwire/account-check.ts';
import { SipTrunkService } from './sip-trunks/service.ts';
import { twilioAccountCheck } from './carriers/twilio/account-check.ts';
import type { CallManager } from './call/manager.ts';
import type { CallRegistry } from './call/registry.ts';
import { createCallRuntime } from './call/runtime.ts';
import type { Dialer } from './records/dialer.ts';
import type { CallEvents } from './records/events.ts';
import { createCampaigns } from './campaigns/campaigns.ts';
import type { CampaignScheduler } from './campaigns/scheduler.ts';
import { createCarriers } from './carriers/carriers.ts';
import type { CallOutcomes } from './carriers/outcomes.ts';
import { mediaStreamUrl } from './carriers/twilio/twiml.ts';
import { cryptoRandomHex, systemClock, type Clock, type RandomHex } from './clock.ts';
import type { Config } from './config.ts';
import { createServiceHttp } from './http/service-http.ts';
import { createLogger } from './logger.ts';
import { createMetrics, type ServiceMetrics } from './metrics/metrics.ts';
import { startCallTracing } from './telemetry/tracing.ts';
import { WEBHOOK_DEFAULTS, WebhookSender } from './webhooks/dispatcher.ts';
import { EgressPolicy } from './net/egress.ts';
import { OutboundHttp } from './net/http.ts';
import { LLM_CLIENT_DEFAULTS } from './llm/client.ts';
import { createEmbeddedSpeechEngines } from './speech/provider.ts';
import { webSocketOpener } from './net/websocket.ts';
import type { SpeechEngineProvider } from './speech/types.ts';
import type { Db } from './store/database.ts';
import { openPgStore } from './store/postgres/store.ts';
import { openStore } from './store/store.ts';
import { loadOrCreateSecretsKey, SecretBox } from './secrets/sealed.ts';
import { realTimers, type Timers } from './timers.ts';

export interface ServiceOptions {
  config: Config;
  timers?: Timers;
  /** Speech engines; the embedded offline ones by default. */
  speech?: SpeechEngineProvider;
  /** Warm the embedded default voice at start-up (npm start does; tests leave it off). */
  warmSpeech?: boolean;
  /**
   * Load AGENTS_FILE (true by default). Of several workers started together only the first does
   * (cluster/supervisor.ts), and a restarted worker does not, so a file never undoes a PATCH twice.
   */
  setup?: boolean;
  logger?: Logger;
  clock?: Clock;
  random?: RandomHex;
  dialer?: Dialer;
}

export interface RunningService {
  /** The address the service listens on (http://host:port). */
  url: string;
  publicUrl: string;
  /** The embedded SQLite database, when the store is SQLite (tests read it). */
  db: Db | undefined;
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
  const timers = options.timers ?? realTimers;
  const dataDir = resolve(config.dataDir);
  // PUBLIC_URL, or the listening address once known: carriers and browsers call back to it.
  // The peer address: where this process is reached by its peers and by its own simulated phones.
  const address = { public: config.publicUrl ?? '', listen: '', peer: '' };
  const publicUrl = () => address.public;

  const { auth, generatedKey } = createAuthenticator(config.apiKeys, dataDir, { random, logger });
  // Every request an agent's configuration causes goes through this, held to the egress policy.
  const outbound = new OutboundHttp(EgressPolicy.fromEnv(config.egressAllow));
  let metrics: ServiceMetrics | undefined;
  // The sender is made once the HTTP pool is; until then queued deliveries wait for its first pass.
  let webhooksQueued = (): void => undefined;
  // Secrets are sealed in the store with SECRETS_KEY, or the key generated into DATA_DIR (as the API key is).
  const secrets = new SecretBox(loadOrCreateSecretsKey(config.secretsKey, dataDir, random).key);
  const storeOptions = { random, now: () => clock.now(), webhooksQueued: () => webhooksQueued(), secrets };
  const store = config.database
    ? await openPgStore(config.database.url, { ...storeOptions, poolSize: config.database.poolSize })
    : openStore(dataDir, storeOptions);
  try {
    const sealed = await store.sealStoredSecrets();
    if (sealed > 0)
      logger.info({ records: sealed }, 'sealed the secrets of records stored before secrets were encrypted');
  } catch (error) {
    await store.close();
    throw error;
  }
  const webhookSender = new WebhookSender({
    repo: store.webhooks,
    dispatcher: () => outbound.dispatcher(),
    clock,
    random,
    options: { ...WEBHOOK_DEFAULTS, ...config.webhooks },
    log: logger,
    onAttempt: (outcome) => metrics?.webhookAttempt(outcome),
  });
  webhooksQueued = () => webhookSender.kick();
  const speech =
    options.speech ??
    createEmbeddedSpeechEngines({
      warm: options.warmSpeech ?? false,
      dispatcher: outbound.dispatcher(),
      openWebSocket: webSocketOpener(outbound.policy),
    });
  // Agents name provider credentials; a call resolves them in its organization when it starts.
  const credentialsByName: CredentialLookup = (orgId, name) => store.providerCredentials.byName(orgId, name);
  const agents = new AgentService(store.agents, clock, (url) => outbound.policy.literalRefusal(url), credentialsByName);
  const providerCredentials = new ProviderCredentialService({
    repo: store.providerCredentials,
    clock,
    random,
    refusal: (url) => outbound.policy.literalRefusal(url),
    agentsNaming: (orgId, name) => agents.namingCredential(orgId, name),
  });
  // Organizations' own carrier accounts; Twilio's are tried at Twilio before they are kept.
  const carrierAccounts = new CarrierAccountService({
    repo: store.carrierAccounts,
    clock,
    random,
    checks: {
      twilio: twilioAccountCheck({ apiBase: config.twilioApiBase, dispatcher: outbound.dispatcher() }),
      telnyx: telnyxAccountCheck({ apiBase: config.telnyxApiBase, dispatcher: outbound.dispatcher() }),
      plivo: plivoAccountCheck({ apiBase: config.plivoApiBase, dispatcher: outbound.dispatcher() }),
      vonage: vonageAccountCheck({
        apiBase: config.vonageApiBase,
        dispatcher: outbound.dispatcher(),
        now: () => clock.now(),
      }),
      signalwire: signalwireAccountCheck({ apiBase: config.signalwireApiBase, dispatcher: outbound.dispatcher() }),
    },
  });
  const sipTrunks = new SipTrunkService({ repo: store.sipTrunks, clock, random });
  const carriers = await createCarriers(config, {
    publicUrl,
    peerUrl: () => address.peer,
    carrierCalls: store.carrierCalls,
    carrierAccounts: store.carrierAccounts,
    sipTrunks: store.sipTrunks,
    clock,
    logger,
    dispatcher: outbound.dispatcher(),
    egress: outbound.policy,
    dialer: options.dialer,
  });
  const calls = createCallRuntime(config, {
    agents,
    agentRepo: store.agents,
    callRepo: store.calls,
    nodes: store.nodes,
    credits: store.credits,
    credentials: credentialsByName,
    speech,
    dialer: carriers.dialer,
    timers,
    clock,
    random,
    logger,
    dataDir,
    publicUrl,
    nodeUrl: () => address.peer || null,
    outbound,
  });
  const outcomes = carriers.connect(calls.service, calls.registry, calls.events);
  const llmClient = () => ({ dispatcher: outbound.dispatcher(LLM_CLIENT_DEFAULTS.connectTimeoutMs) });
  const testRunner = new TestRunner({
    calls: calls.service,
    callRepo: store.calls,
    events: calls.events,
    registry: calls.registry,
    repo: store.agentTests,
    speech,
    mediaUrl: () => mediaStreamUrl(address.peer),
    recordingPath: (callId) => calls.manager.recordingPath(callId),
    judge: modelJudge(llmClient),
    llmClient,
    credentials: credentialsByName,
    clock,
    random: Math.random,
    log: logger.child({ room: 'agent-tests' }),
  });
  const agentTests = new AgentTestService(
    store.agentTests,
    agents,
    store.calls,
    testRunner,
    clock,
    random,
    logger,
    calls.nodeId,
    (url) => outbound.policy.literalRefusal(url),
  );
  const campaigns = createCampaigns(config, {
    repo: store.campaigns,
    agents,
    calls: calls.service,
    events: calls.events,
    clock,
    random,
    logger,
  });
  const tracing = config.tracing ? startCallTracing({ events: calls.events, ...config.tracing }) : undefined;
  metrics = config.metrics
    ? createMetrics({ events: calls.events, registry: calls.registry, webhookBacklog: () => store.webhooks.backlog() })
    : undefined;
  const http = await createServiceHttp(config, {
    auth,
    agents,
    agentRepo: store.agents,
    callRepo: store.calls,
    calls,
    campaigns: campaigns.service,
    agentTests,
    providerCredentials,
    carrierAccounts,
    sipTrunks,
    outcomes,
    carriers,
    carrierCalls: store.carrierCalls,
    idempotency: store.idempotency,
    rateWindows: store.rateWindows,
    metrics,
    webhooks: store.webhooks,
    webCallTokens: store.webCallTokens,
    egressRefusal: (url) => outbound.policy.literalRefusal(url),
    storeProblem: () => store.problem(),
    timers,
    clock,
    random,
    logger,
    publicUrl,
  });

  const { url, peerUrl } = await http.listen();
  address.public ||= url;
  address.listen = url;
  address.peer = peerUrl;
  outbound.policy.ownAddresses([address.public, url, peerUrl]);
  // After carriers.connect (a recovered outbound call hangs its carrier leg up too) and once the
  // address that links recordings is known.
  await calls.recover();
  // This node's own runs from before are dead (it restarted); a live peer's go on.
  await agentTests.recover((await store.nodes.alive(clock.now())).filter((node) => node !== calls.nodeId));
  // And a peer's, once its lease has run out.
  calls.afterHeartbeat((liveNodes) => agentTests.recover(liveNodes));
  // Deliveries a previous process left in the outbox go out now.
  webhookSender.start();
  if (config.agentsFile && (options.setup ?? true)) {
    const entries = readAgentsFile(resolve(config.agentsFile), address.public);
    for (const orgId of auth.organizations) {
      await agents.loadFromFile(orgId, entries);
      for (const entry of entries) await agentTests.loadFromFile(orgId, entry.agentId, entry.tests);
    }
    logger.info({ file: config.agentsFile, agents: entries.map((e) => e.agentId) }, 'agents loaded');
  }
  // Only once the server listens: simulated phones call back into its media endpoint.
  campaigns.scheduler.start();

  let closing: Promise<void> | undefined;
  return {
    url,
    publicUrl: address.public,
    db: store.sqlite,
    logger,
    registry: calls.registry,
    events: calls.events,
    manager: calls.manager,
    scheduler: campaigns.scheduler,
    dialer: carriers.dialer,
    outcomes,
    ...(generatedKey ? { generatedKey } : {}),
    beginShutdown: http.beginShutdown,
    close() {
      // Each step is logged as it starts: a shutdown that hangs says where.
      const step = async (name: string, run: () => unknown): Promise<void> => {
        logger.info({ step: name }, 'shutdown step');
        await run();
      };
      closing ??= (async () => {
        http.beginShutdown();
        campaigns.scheduler.halt();
        await step('agent test runs', () => testRunner.close());
        await step('calls drained', () => calls.drain(config.shutdownDrainMs));
        await step('node lease left', () => calls.leave());
        await step('carriers', () => carriers.close());
        await step('http', () => http.close());
        await step('webhooks', () => webhookSender.stop());
        await step('tracing', () => tracing?.close());
        metrics?.close();
        await step('scheduler', () => campaigns.scheduler.stop());
        // No timer may touch the store once it is closed.
        calls.streams.close();
        if (!options.speech) await step('speech engines', () => speech.close());
        await step('outbound requests', () => outbound.close());
        await step('store', () => store.close());
      })();
      return closing;
    },
  };
}
