// The service as a real process (node src/main.ts), for tests of what happens across processes:
// restarts, crashes, and several processes sharing one store.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { TEST_TWILIO_TOKEN } from './service.ts';

const root = join(import.meta.dirname, '..', '..');

export interface ServiceProcess {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
}

/** Starts the service on `port` with `dataDir`, as `key`'s organization; resolves once it is healthy. */
export async function startServiceProcess(options: {
  dataDir: string;
  port: number;
  key: string;
  env?: Record<string, string>;
  started: ChildProcess[];
}): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env: {
      ...process.env,
      DATA_DIR: options.dataDir,
      PORT: String(options.port),
      API_KEYS: options.key,
      SHUTDOWN_DRAIN_MS: '500',
      LOG_LEVEL: 'warn',
      TWILIO_AUTH_TOKEN: TEST_TWILIO_TOKEN,
      WEBHOOK_RETRY_BASE_MS: '200',
      EGRESS_ALLOW: '127.0.0.0/8',
      // One process per node unless a test asks for workers.
      WORKERS: '1',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  options.started.push(child);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  // The last of what it wrote, for the error: a process that dies at start says why.
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-2_000)));
  const url = `http://127.0.0.1:${options.port}`;
  await untilHealthy(url, child, () => stderr);
  return { child, url, exited };
}

/** How long a service process may take to be healthy (a cold start through tsx, beside other files' work). */
const START_TIMEOUT_MS = 60_000;

/**
 * Resolves once the service process `child` at `url` answers /healthz. Fails at once if it exits first, or after
 * START_TIMEOUT_MS, with the end of what it wrote (`stderr`).
 */
export async function untilHealthy(url: string, child: ChildProcess, stderr: () => string): Promise<void> {
  // A cold start compiles the whole tree through tsx in each of its processes (three with WORKERS=2): at the start of
  // the suite, beside the type check and other files' services, that took over 20 s on two cores.
  const until = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < until) {
    const ended = child.exitCode ?? child.signalCode;
    if (ended !== null) throw new Error(`the service exited (${ended}) before it was healthy:\n${stderr()}`);
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the service was not healthy within ${START_TIMEOUT_MS / 1000} s:\n${stderr()}`);
}

/**
 * The shipped demo agent answering `number`, as an agents file in `dataDir` for service processes
 * to load (a process loading the shipped file itself would undo a PATCH made by another). Its path.
 */
export function demoAgentsFile(dataDir: string, number: string, inactivityTimeoutMs: number): string {
  const demo = JSON.parse(readFileSync(join(root, 'media', 'agents', 'demo.json'), 'utf8')) as Record<string, unknown>;
  const file = join(dataDir, 'agents.json');
  writeFileSync(
    file,
    JSON.stringify({ ...demo, inbound_numbers: [number], inactivity_timeout_ms: inactivityTimeoutMs }),
  );
  return file;
}

/** The processes `pid` started, each with its command line and environment (Linux /proc). */
export function childProcessesOf(pid: number): { pid: number; cmdline: string; env: string[] }[] {
  const pids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map(Number);
  return pids.flatMap((child) => {
    try {
      return [
        {
          pid: child,
          cmdline: readFileSync(`/proc/${child}/cmdline`, 'utf8').replaceAll('\0', ' '),
          env: readFileSync(`/proc/${child}/environ`, 'utf8').split('\0'),
        },
      ];
    } catch {
      return []; // it ended meanwhile
    }
  });
}

/** An API request to a service process as `key`'s organization; a body is sent as JSON. */
export function apiAs(key: string): (url: string, method: string, path: string, body?: unknown) => Promise<Response> {
  return (url, method, path, body) =>
    fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
}

/** A request on a connection of its own: the cluster hands each new connection to the next worker. */
export function freshRequest(
  key: string,
  url: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${url}${path}`,
      {
        method,
        agent: false,
        headers: {
          authorization: `Bearer ${key}`,
          connection: 'close',
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

/** Where the processes of a test keep their store: a SQLite file under their DATA_DIR, or a PostgreSQL database. */
export type SharedStore = { dataDir: string } | { databaseUrl: string };

/** Runs one read-only query on the shared store (the test looks at what the processes wrote). */
export async function queryStore<R>(where: SharedStore, sql: string, params: (string | null)[] = []): Promise<R[]> {
  if ('databaseUrl' in where) {
    const client = new pg.Client({ connectionString: where.databaseUrl });
    await client.connect();
    try {
      let n = 0;
      return (
        await client.query(
          sql.replace(/\?/g, () => `$${++n}`),
          params,
        )
      ).rows as R[];
    } finally {
      await client.end();
    }
  }
  const db = new Database(join(where.dataDir, 'voicecall.db'), { readonly: true });
  try {
    return db.prepare(sql).all(...params) as R[];
  } finally {
    db.close();
  }
}

/** Resolves once `n` service processes sharing the store hold a lease with a peer address: all of them listen. */
export async function untilNodesListen(where: SharedStore, n: number, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await queryStore<{ n: number }>(
      where,
      'SELECT count(*) AS n FROM service_nodes WHERE url IS NOT NULL',
    );
    if (Number(row?.n) >= n) return;
    if (Date.now() > until) throw new Error(`${row?.n ?? 0} of ${n} service processes listen after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The node each call is owned by (the one running it), read from the store the processes share. */
export async function callOwners(where: SharedStore): Promise<Map<string, string>> {
  const rows = await queryStore<{ call_id: string; owner_node: string }>(
    where,
    'SELECT call_id, owner_node FROM calls',
  );
  return new Map(rows.map((r) => [r.call_id, r.owner_node]));
}
