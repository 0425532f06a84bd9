// Configuration comes from the environment only; every default is here and in README.md.
import { isIP } from 'node:net';
import { availableParallelism, hostname } from 'node:os';
import { z } from 'zod';
import { CodedError } from './errors.ts';

/** Each SIP call takes an even port of this range and keeps the odd one above it for RTCP. */
export const DEFAULT_RTP_PORTS = '20000-29999';

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();

export const ConfigSchema = z.object({
  PORT: port.default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default('./data'),
  // The store: SQLite under DATA_DIR unless this names a PostgreSQL database shared by several nodes.
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/, error: 'a postgres:// or postgresql:// URL' }).optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(10),
  API_KEYS: z.string().optional(),
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  AGENTS_FILE: z.string().optional(),
  DEMO: z.enum(['on', 'off']).default('on'),
  BODY_LIMIT_BYTES: positiveInt.default(1024 * 1024),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(1200),
  REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(600_000).default(30_000),
  TRUST_PROXY: z
    .string()
    .regex(
      /^[0-9A-Fa-f.:/]+(\s*,\s*[0-9A-Fa-f.:/]+)*$/,
      'comma-separated addresses or CIDRs of the proxies in front of the service',
    )
    .optional(),
  PRICE_PER_MINUTE_CREDITS: z.coerce.number().min(0).default(10),
  SHUTDOWN_DRAIN_MS: z.coerce.number().int().min(0).default(10_000),
  MAX_CONCURRENT_CALLS: z.coerce.number().int().min(0).default(0),
  ORG_LIMITS: z.string().optional(),
  TWILIO_AUTH_TOKEN: z.string().min(1).optional(),
  TWILIO_SIGNATURE: z.enum(['on', 'off']).default('on'),
  STREAM_CONNECT_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  // This process among those sharing the store: the calls it runs are its own, and a peer finishes
  // them once its lease has run out. Defaults to host:port, which a restart keeps.
  NODE_ID: z
    .string()
    .regex(/^[A-Za-z0-9._:-]{1,100}$/, 'letters, digits, . _ : -, at most 100')
    .optional(),
  NODE_LEASE_MS: z.coerce.number().int().min(1_000).max(600_000).default(15_000),
  // Service processes on this machine, all on PORT (node:cluster): one per core by default.
  WORKERS: z.coerce.number().int().min(1).max(64).default(availableParallelism()),
  // With WORKERS > 1: one embedded recogniser (Moonshine) for the machine, or one per service process.
  STT_POOL: z.enum(['machine', 'process']).default('machine'),
  // Each process also listens on a peer port of its own: requests about a call that runs on another
  // process (live control, carrier callbacks) are passed on to it there, and in-process simulated
  // phones call it there. NODE_ADDRESS is the host peers reach it at (the PEER_HOST, or this
  // machine's name when PEER_HOST is a wildcard).
  PEER_HOST: z.string().min(1).default('127.0.0.1'),
  PEER_PORT: port.default(0),
  NODE_ADDRESS: z
    .string()
    .regex(/^[A-Za-z0-9.:_-]{1,253}$/, 'a host name or address, without brackets')
    .optional(),
  // Outbound calling (campaigns, batches, POST /v2/calls).
  TWILIO_ACCOUNT_SID: z
    .string()
    .regex(/^AC[0-9a-zA-Z]{32}$/, 'AC followed by 32 characters')
    .optional(),
  TWILIO_API_BASE: z.url({ protocol: /^https?$/ }).default('https://api.twilio.com'),
  TELNYX_API_BASE: z.url({ protocol: /^https?$/ }).default('https://api.telnyx.com'),
  SIGNALWIRE_API_BASE: z.url({ protocol: /^https?$/ }).optional(),
  PLIVO_API_BASE: z.url({ protocol: /^https?$/ }).default('https://api.plivo.com'),
  VONAGE_API_BASE: z.url({ protocol: /^https?$/ }).default('https://api.nexmo.com'),
  RING_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  SIM_NUMBERS: z.string().optional(),
  SIM_ANSWER_DELAY_MS: z.coerce.number().int().min(0).default(1_000),
  SIM_SCRIPTS_DIR: z.string().min(1).default('media/sim-scripts'),
  MAX_TASKS: positiveInt.default(10_000),
  BATCH_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(5),
  SCHEDULER_POLL_MS: z.coerce.number().int().min(10).default(1_000),
  SCHEDULER_LEASE_MS: z.coerce.number().int().min(100).default(30_000),
  EGRESS_ALLOW: z.string().optional(),
  METRICS: z.enum(['off', 'public']).default('off'),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  OTEL_SERVICE_NAME: z.string().min(1).default('voicecall-runtime'),
  WEBHOOK_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(50).default(8),
  WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().min(10).default(10_000),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  METRICS_TOKEN: z.string().min(16, 'at least 16 characters').optional(),
  // The key secrets are sealed with in the store (64 hex characters, or base64 of 32 bytes); generated into DATA_DIR
  // when unset.
  SECRETS_KEY: z.string().optional(),
  // SIP trunks (docs/carriers/sip.md): nothing listens unless SIP_LISTEN names where.
  SIP_LISTEN: z.string().optional(),
  SIP_PUBLIC_HOST: z
    .string()
    .regex(/^[A-Za-z0-9.:_-]{1,253}$/, 'a host name or address, without brackets')
    .optional(),
  RTP_PORTS: z.string().default(DEFAULT_RTP_PORTS),
  // No RTP from a live SIP call's far side for this long ends the call (its network or trunk is gone).
  SIP_MEDIA_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
});

const OrgLimitSchema = z.strictObject({
  max_concurrent_calls: z.int().min(0).optional(),
  credit_balance: z.number().min(0).optional(),
});
const OrgLimitsSchema = z.record(z.string(), OrgLimitSchema);
export type OrgLimit = z.infer<typeof OrgLimitSchema>;

export type RawConfig = z.infer<typeof ConfigSchema>;

export interface SipListenEntry {
  transport: 'udp' | 'tcp';
  host: string;
  port: number;
}

/** RTP ports for SIP calls: `low` is the first even port, `high` the last port of the range. */
export interface PortRange {
  low: number;
  high: number;
}

export interface ApiKeyEntry {
  orgId: string;
  key: string;
}

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** PostgreSQL instead of the embedded SQLite store, and its connection pool per process. */
  database: { url: string; poolSize: number } | undefined;
  /** Parsed API_KEYS; empty when unset (a key is then generated under dataDir). */
  apiKeys: ApiKeyEntry[];
  /** Set when PUBLIC_URL is given; otherwise derived from the listening address at start. */
  publicUrl: string | undefined;
  logLevel: RawConfig['LOG_LEVEL'];
  agentsFile: string;
  /** on: the demo model peer is served under /demo/ and the demo agent loaded (AGENTS_FILE's default); off: neither. */
  demo: boolean;
  bodyLimitBytes: number;
  webhooks: { maxAttempts: number; retryBaseMs: number; timeoutMs: number };
  /** OTLP/HTTP collector for traces (…/v1/traces is appended), or none. */
  tracing: { endpoint: string; serviceName: string } | undefined;
  /** GET /metrics: not served (undefined), open to anyone (public), or to a bearer of the token. */
  metrics: { access: 'public' } | { access: 'token'; token: string } | undefined;
  /** A request must arrive whole (headers and body) within this time, or it is answered 408 and closed. */
  requestTimeoutMs: number;
  /** The proxies whose X-Forwarded-For gives the client's address; none by default. */
  trustProxy: string[] | undefined;
  rateLimitPerMinute: number;
  pricePerMinuteCredits: number;
  shutdownDrainMs: number;
  /** Concurrent calls per organization when ORG_LIMITS names none; 0 = unlimited. */
  maxConcurrentCalls: number;
  /** Per-organization limits: concurrent calls and a credit balance debited by call_cost. */
  orgLimits: Record<string, OrgLimit>;
  twilioAuthToken: string | undefined;
  /** on: carrier webhooks must be signed with TWILIO_AUTH_TOKEN (refused without one); off: accepted unchecked. */
  twilioSignature: 'on' | 'off';
  /** How long a registered call may wait for its media stream before it is ended. */
  streamConnectTimeoutMs: number;
  /** NODE_ID, or host:PORT (a restart keeps it). */
  nodeId: string;
  nodeLeaseMs: number;
  workers: number;
  /**
   * WORKERS > 1: the service processes share one Moonshine recogniser process ("machine") or each starts its own
   * ("process").
   */
  sttPool: 'machine' | 'process';
  /** Where this process listens for its peers, and the host they reach it at. */
  peer: { host: string; port: number; address: string };
  /** Set when both TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN are: outbound calls go through Twilio. */
  twilio: { accountSid: string; authToken: string; apiBase: string } | undefined;
  /** TWILIO_API_BASE: Twilio's REST API for every Twilio account, the service-wide one and organizations' own. */
  twilioApiBase: string;
  /** TELNYX_API_BASE: Telnyx's REST API for organizations' own Telnyx accounts. */
  telnyxApiBase: string;
  /** SIGNALWIRE_API_BASE: every SignalWire space's REST API at this scheme and host (a stand-in); unset: https://{space_url}. */
  signalwireApiBase: string | undefined;
  /** PLIVO_API_BASE: Plivo's REST API for organizations' own Plivo accounts. */
  plivoApiBase: string;
  /** VONAGE_API_BASE: Vonage's Voice API for organizations' own Vonage accounts. */
  vonageApiBase: string;
  ringTimeoutMs: number;
  /** Simulated phones: "+1555…=answer:script,…" or the path of a JSON file with the same map. */
  simNumbers: string | undefined;
  simAnswerDelayMs: number;
  simScriptsDir: string;
  maxTasks: number;
  batchConcurrency: number;
  schedulerPollMs: number;
  schedulerLeaseMs: number;
  /** EGRESS_ALLOW: CIDRs and host:port entries the egress policy opens; parsed by net/egress.ts. */
  egressAllow: string | undefined;
  /** SECRETS_KEY, parsed (32 bytes); undefined: the key kept in DATA_DIR/secrets-key. */
  secretsKey: Buffer | undefined;
  /**
   * SIP trunks: set when SIP_LISTEN is. `publicHost` is SIP_PUBLIC_HOST (undefined: derived from the
   * listeners at start); `rtpPorts` the even/odd pairs calls take their media port from;
   * `mediaTimeoutMs` (SIP_MEDIA_TIMEOUT_MS) how long a live call may go without RTP before it ends.
   */
  sip:
    | { listen: SipListenEntry[]; publicHost: string | undefined; rtpPorts: PortRange; mediaTimeoutMs: number }
    | undefined;
}

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]']);

export class ConfigError extends CodedError<'CONFIG_INVALID'> {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('CONFIG_INVALID', message, options);
  }
}

const ORG_ID = /^[A-Za-z0-9_.-]{1,64}$/;
/** Shorter keys can be guessed by the thousand a second an open port allows. */
export const MIN_API_KEY_LENGTH = 32;

/** `org_id:key` pairs separated by commas; a bare key belongs to org `default`. */
export function parseApiKeys(value: string): ApiKeyEntry[] {
  const entries: ApiKeyEntry[] = [];
  for (const raw of value.split(',')) {
    const item = raw.trim();
    if (item === '') continue;
    const colon = item.indexOf(':');
    const orgId = colon === -1 ? 'default' : item.slice(0, colon).trim();
    const key = colon === -1 ? item : item.slice(colon + 1).trim();
    if (!ORG_ID.test(orgId))
      throw new ConfigError(`API_KEYS: organization id ${JSON.stringify(orgId)} must match ${ORG_ID}`);
    if (key.length < MIN_API_KEY_LENGTH) {
      throw new ConfigError(
        `API_KEYS: the key of organization ${orgId} is shorter than ${MIN_API_KEY_LENGTH} characters; a short key can be guessed (openssl rand -hex 24 makes a good one)`,
      );
    }
    if (entries.some((e) => e.key === key)) throw new ConfigError(`API_KEYS: a key is listed twice`);
    entries.push({ orgId, key });
  }
  return entries;
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = ConfigSchema.safeParse(
    Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== '')),
  );
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ConfigError(`invalid configuration: ${problems}`);
  }
  const raw = parsed.data;
  return {
    port: raw.PORT,
    host: raw.HOST,
    dataDir: raw.DATA_DIR,
    database: raw.DATABASE_URL ? { url: raw.DATABASE_URL, poolSize: raw.DATABASE_POOL_SIZE } : undefined,
    apiKeys: raw.API_KEYS ? parseApiKeys(raw.API_KEYS) : [],
    publicUrl: raw.PUBLIC_URL?.replace(/\/+$/, ''),
    logLevel: raw.LOG_LEVEL,
    agentsFile: raw.AGENTS_FILE ?? (raw.DEMO === 'on' ? 'media/agents/demo.json' : ''),
    demo: raw.DEMO === 'on',
    bodyLimitBytes: raw.BODY_LIMIT_BYTES,
    tracing: raw.OTEL_EXPORTER_OTLP_ENDPOINT
      ? { endpoint: raw.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: raw.OTEL_SERVICE_NAME }
      : undefined,
    webhooks: {
      maxAttempts: raw.WEBHOOK_MAX_ATTEMPTS,
      retryBaseMs: raw.WEBHOOK_RETRY_BASE_MS,
      timeoutMs: raw.WEBHOOK_TIMEOUT_MS,
    },
    metrics:
      raw.METRICS === 'public'
        ? { access: 'public' }
        : raw.METRICS_TOKEN
          ? { access: 'token', token: raw.METRICS_TOKEN }
          : undefined,
    requestTimeoutMs: raw.REQUEST_TIMEOUT_MS,
    trustProxy: raw.TRUST_PROXY?.split(',').map((s) => s.trim()),
    rateLimitPerMinute: raw.RATE_LIMIT_PER_MINUTE,
    pricePerMinuteCredits: raw.PRICE_PER_MINUTE_CREDITS,
    shutdownDrainMs: raw.SHUTDOWN_DRAIN_MS,
    maxConcurrentCalls: raw.MAX_CONCURRENT_CALLS,
    orgLimits: parseOrgLimits(raw.ORG_LIMITS),
    twilioAuthToken: raw.TWILIO_AUTH_TOKEN,
    twilioSignature: raw.TWILIO_SIGNATURE,
    streamConnectTimeoutMs: raw.STREAM_CONNECT_TIMEOUT_MS,
    nodeId: raw.NODE_ID ?? `${hostname()}:${raw.PORT}`,
    nodeLeaseMs: raw.NODE_LEASE_MS,
    workers: raw.WORKERS,
    sttPool: raw.STT_POOL,
    peer: {
      host: raw.PEER_HOST,
      port: raw.PEER_PORT,
      address: raw.NODE_ADDRESS ?? (WILDCARD_HOSTS.has(raw.PEER_HOST) ? hostname() : raw.PEER_HOST),
    },
    twilio:
      raw.TWILIO_ACCOUNT_SID && raw.TWILIO_AUTH_TOKEN
        ? {
            accountSid: raw.TWILIO_ACCOUNT_SID,
            authToken: raw.TWILIO_AUTH_TOKEN,
            apiBase: raw.TWILIO_API_BASE.replace(/\/+$/, ''),
          }
        : undefined,
    twilioApiBase: raw.TWILIO_API_BASE.replace(/\/+$/, ''),
    telnyxApiBase: raw.TELNYX_API_BASE.replace(/\/+$/, ''),
    signalwireApiBase: raw.SIGNALWIRE_API_BASE?.replace(/\/+$/, ''),
    plivoApiBase: raw.PLIVO_API_BASE.replace(/\/+$/, ''),
    vonageApiBase: raw.VONAGE_API_BASE.replace(/\/+$/, ''),
    ringTimeoutMs: raw.RING_TIMEOUT_MS,
    simNumbers: raw.SIM_NUMBERS,
    simAnswerDelayMs: raw.SIM_ANSWER_DELAY_MS,
    simScriptsDir: raw.SIM_SCRIPTS_DIR,
    maxTasks: raw.MAX_TASKS,
    batchConcurrency: raw.BATCH_CONCURRENCY,
    schedulerPollMs: raw.SCHEDULER_POLL_MS,
    schedulerLeaseMs: raw.SCHEDULER_LEASE_MS,
    egressAllow: raw.EGRESS_ALLOW,
    secretsKey: raw.SECRETS_KEY === undefined ? undefined : parseSecretsKey(raw.SECRETS_KEY),
    sip: sipConfig(raw),
  };
}

function sipConfig(raw: RawConfig): Config['sip'] {
  // RTP_PORTS is checked even without SIP_LISTEN, so a typo shows before SIP is turned on.
  const rtpPorts = parseRtpPorts(raw.RTP_PORTS);
  if (raw.SIP_LISTEN === undefined) return undefined;
  return {
    listen: parseSipListen(raw.SIP_LISTEN),
    publicHost: raw.SIP_PUBLIC_HOST,
    rtpPorts,
    mediaTimeoutMs: raw.SIP_MEDIA_TIMEOUT_MS,
  };
}

/** SIP_LISTEN: comma-separated `udp:HOST:PORT` / `tcp:HOST:PORT`, an IPv6 host in brackets, one per transport. */
export function parseSipListen(text: string): SipListenEntry[] {
  const entries: SipListenEntry[] = [];
  for (const part of text.split(',').map((p) => p.trim())) {
    if (part === '') continue;
    const match = /^(udp|tcp):(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/i.exec(part);
    const host = match ? (match[2] ?? match[3]!) : '';
    const port = match ? Number(match[4]) : NaN;
    if (!match || isIP(host) === 0 || !(port >= 0 && port <= 65535))
      throw new ConfigError(
        `SIP_LISTEN: entry ${JSON.stringify(part)} is not udp:HOST:PORT or tcp:HOST:PORT with HOST an IP address`,
      );
    const transport = match[1]!.toLowerCase() as SipListenEntry['transport'];
    if (entries.some((e) => e.transport === transport)) throw new ConfigError(`SIP_LISTEN: names ${transport} twice`);
    entries.push({ transport, host, port });
  }
  if (entries.length === 0) throw new ConfigError('SIP_LISTEN: names no listener');
  return entries;
}

/**
 * SIP_LISTEN for worker `index` of WORKERS: each port moved up by the index (port 0 stays "any"), so every service
 * process has SIP sockets of its own. Two processes sharing one UDP port would each get half of a dialog's requests.
 */
export function sipListenOfWorker(entries: SipListenEntry[], index: number): string {
  return entries
    .map((e) => {
      const port = e.port === 0 ? 0 : e.port + index;
      if (port > 65535)
        throw new ConfigError(
          `SIP_LISTEN: ${e.transport} port ${e.port} leaves worker ${index} no port (each worker listens on port + its index)`,
        );
      return `${e.transport}:${e.host.includes(':') ? `[${e.host}]` : e.host}:${port}`;
    })
    .join(',');
}

/** RTP_PORTS: `LOW-HIGH` with 1024 ≤ LOW < HIGH ≤ 65535, holding at least one even/odd pair. */
export function parseRtpPorts(text: string): PortRange {
  const match = /^\s*(\d{1,5})\s*-\s*(\d{1,5})\s*$/.exec(text);
  const low = match ? Number(match[1]) : NaN;
  const high = match ? Number(match[2]) : NaN;
  const firstEven = low + (low % 2);
  if (!(low >= 1024 && high <= 65535 && firstEven + 1 <= high))
    throw new ConfigError(
      `RTP_PORTS: must be LOW-HIGH within 1024-65535 with room for one even/odd pair, not ${JSON.stringify(text)}`,
    );
  return { low: firstEven, high };
}

/**
 * SECRETS_KEY as the environment gives it: 64 hex characters, or the base64 of 32 bytes
 * (`openssl rand -hex 32` or `openssl rand -base64 32` make one). Anything else is a ConfigError.
 */
export function parseSecretsKey(value: string, source = 'SECRETS_KEY'): Buffer {
  const text = value.trim();
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/]{43}=$/.test(text)) {
    const bytes = Buffer.from(text, 'base64');
    if (bytes.length === 32) return bytes;
  }
  throw new ConfigError(
    `${source}: expected 64 hex characters or the base64 of 32 bytes (openssl rand -hex 32 makes one)`,
  );
}

/** ORG_LIMITS: JSON {"org_id": {"max_concurrent_calls": n, "credit_balance": credits}}. */
export function parseOrgLimits(value: string | undefined): Record<string, OrgLimit> {
  if (!value) return {};
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch {
    throw new ConfigError('ORG_LIMITS: not valid JSON');
  }
  const parsed = OrgLimitsSchema.safeParse(json);
  if (!parsed.success)
    throw new ConfigError(
      `ORG_LIMITS: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return parsed.data;
}
