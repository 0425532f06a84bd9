// Starts the real service on 127.0.0.1:0 with a temporary DATA_DIR, and speaks real HTTP to it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { startService, type RunningService, type ServiceOptions } from '../../src/app.ts';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { SttConfigSchema } from '../../src/agents/schema.ts';
import { createSttEngine } from '../../src/speech/stt/index.ts';
import { testDispatcher } from '../support/outbound.ts';

/** How long stop() waits for the service to close before it fails, saying what was still running. */
const STOP_WITHIN_MS = 45_000;

export interface TestService {
  service: RunningService;
  url: string;
  dataDir: string;
  /** Every log line the service wrote. */
  logs: string[];
  keyOf(org: string): string;
  request(
    method: string,
    path: string,
    options?: { body?: unknown; raw?: string; key?: string | null; headers?: Record<string, string> },
  ): Promise<TestResponse>;
  stop(): Promise<void>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON; tests read it through the API's own zod schemas. */
  body: unknown;
  text: string;
}

import { ErrorBodySchema } from '../../src/http/schemas.ts';

/** The error body of a failed request, checked against the one error shape. */
export function errorOf(res: TestResponse) {
  return ErrorBodySchema.strict().parse(res.body);
}

/** The auth token test services check carrier webhooks with; test/helpers/phone.ts signs with it. */
export const TEST_TWILIO_TOKEN = 'test-twilio-auth-token';

export const KEYS: Record<string, string> = {
  acme: 'acme-key-0123456789-0123456789-0123',
  globex: 'globex-key-0123456789-0123456789-0123',
  filters: 'filters-key-0123456789-0123456789-0123',
  'paging-descending': 'paging-desc-key-0123456789-0123456789-0123',
  'paging-ascending': 'paging-asc-key-0123456789-0123456789-0123',
  limited: 'limited-key-0123456789-0123456789-0123',
  broke: 'broke-key-0123456789-0123456789-0123',
};

export async function startTestService(
  env: Record<string, string> = {},
  options: Omit<ServiceOptions, 'config'> & {
    dataDir?: string;
    /** `debug` keeps each end-of-turn decision in `logs`, for a test that prints them when it fails. */
    logLevel?: 'info' | 'debug';
    /**
     * Load the default recogniser's model (the process's one shared engine) before resolving. The first call a
     * process takes otherwise hears nothing until it has loaded: 15-40 s on two loaded cores, past a test's waits.
     */
    recogniserLoaded?: boolean;
  } = {},
): Promise<TestService> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'voicecall-test-'));
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    API_KEYS: Object.entries(KEYS)
      .map(([org, key]) => `${org}:${key}`)
      .join(','),
    LOG_LEVEL: 'info',
    // The tests' model, tool and voice servers listen on loopback, as a local development setup's would.
    EGRESS_ALLOW: '127.0.0.0/8',
    TWILIO_AUTH_TOKEN: TEST_TWILIO_TOKEN,
    ...env,
  });
  const [service] = await Promise.all([
    startService({ ...options, config, logger: options.logger ?? createLogger(options.logLevel ?? 'info', sink) }),
    options.recogniserLoaded ? loadDefaultRecogniser() : undefined,
  ]);
  const defaultKey = KEYS.acme!;
  return {
    service,
    url: service.url,
    dataDir,
    logs,
    keyOf: (org) => KEYS[org] ?? '',
    async request(method, path, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      const key = opts.key === undefined ? defaultKey : opts.key;
      if (key !== null) headers.authorization = `Bearer ${key}`;
      let body: string | undefined;
      if (opts.raw !== undefined) body = opts.raw;
      else if (opts.body !== undefined) {
        body = JSON.stringify(opts.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await fetch(`${service.url}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      return { status: res.status, headers: res.headers, body: parsed, text };
    },
    async stop() {
      // A close that hangs would only say "hook timed out": this says which calls were still live and what the
      // service last logged, well inside the hook's 60 s.
      let timer: NodeJS.Timeout | undefined;
      const stuck = new Promise<'stuck'>((resolve) => (timer = setTimeout(() => resolve('stuck'), STOP_WITHIN_MS)));
      const live = service.registry.all().map((call) => call.callId);
      const outcome = await Promise.race([service.close().catch(() => undefined), stuck]);
      clearTimeout(timer);
      if (outcome === 'stuck')
        throw new Error(
          `the service did not close within ${STOP_WITHIN_MS} ms; live at stop: ${JSON.stringify(live)}, still: ${JSON.stringify(service.registry.all().map((call) => call.callId))}; last logs:\n${logs.slice(-40).join('\n')}`,
        );
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Opens and closes a stream of the default recogniser, so its model is loaded in this process. */
export async function loadDefaultRecogniser(): Promise<void> {
  const recogniser = createSttEngine(SttConfigSchema.parse({}), { dispatcher: testDispatcher });
  await (await recogniser.open({ sampleRate: 8000, language: 'en-US' })).close();
}

/** The call's record once it is over (ended, not connected, or error); throws after `timeoutMs`. */
export async function callEnded(t: TestService, callId: string, timeoutMs = 120_000): Promise<CallRecord> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const record = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);
    if (record.call_status !== 'registered' && record.call_status !== 'ongoing') return record;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`call ${callId} did not end within ${timeoutMs} ms`);
}

/** Resolves once the live call's record holds a tool result (the record is written as the call goes). */
export async function toolAnswered(t: TestService, callId: string, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const body = (await t.request('GET', `/v2/calls/${callId}`)).body as {
      transcript_with_tool_calls?: { role: string }[] | null;
    };
    if (body.transcript_with_tool_calls?.some((item) => item.role === 'tool_call_result')) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  const record = (await t.request('GET', `/v2/calls/${callId}`)).body as {
    transcript?: { role: string; content: string }[] | null;
  };
  throw new Error(
    `no tool result in call ${callId} within ${timeoutMs} ms; transcript: ${JSON.stringify(record.transcript?.map((m) => `${m.role}: ${m.content}`))}`,
  );
}
