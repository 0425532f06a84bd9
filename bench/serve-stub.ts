// npm run bench:serve-stub -- [--port P]: the service with stub speech engines in its own
// process, so bench:calls --url … --engines stub can drive it from another process (the
// harness then does not share the service's one JS thread). Prints one JSON line with its URL,
// key and a stats URL, then every 5 s one JSON line of its own CPU and memory.
// GET {stats}?gc=1 answers the service process's own CPU, memory, event-loop delay since the
// last POST {stats}/reset, and the frames its stub TTS made: bench:calls --stats-url reads it to
// report CPU and memory per call and dropped frames for the service alone.
// --workers N runs N service processes on one port as WORKERS=N does (node:cluster, each its own
// node on the shared store); the stats then add up the workers' CPU, memory, calls and frames, and
// give the worst worker's event-loop delay.
import cluster from 'node:cluster';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { z } from 'zod';
import { startService } from '../src/app.ts';
import { loadConfig, parseSipListen, sipListenOfWorker } from '../src/config.ts';
import { freeUdpPort } from '../test/helpers/net.ts';
import { TEST_TWILIO_TOKEN } from '../test/helpers/service.ts';
import { ServiceStatsSchema, type ServiceStats } from './harness.ts';
import { stubSpeechEngines } from './stub-engines.ts';

const { values } = parseArgs({
  options: { port: { type: 'string' }, workers: { type: 'string' }, sip: { type: 'boolean' } },
});
const port = z.coerce.number().int().min(0).max(65535).default(0).parse(values.port);
const workers = z.coerce.number().int().min(1).max(16).default(1).parse(values.workers);
const key = 'bench-key-0123456789-0123456789-0123';
const DATA_DIR_ENV = 'BENCH_STUB_DATA_DIR';
// --sip: also SIP on UDP at 127.0.0.1 (bench:calls --transport sip --sip … dials it; it makes its own trunk). With
// --workers, worker i listens on that port + i, as WORKERS does (src/cluster/supervisor.ts): the workers are passed
// the first port, and --sip is given every worker's.
const SIP_ENV = 'BENCH_STUB_SIP';
const WORKER_ENV = 'BENCH_STUB_WORKER';
const sipListen = values.sip ? (process.env[SIP_ENV] ?? `udp:127.0.0.1:${await freeUdpPort()}`) : undefined;
const workerIndex = cluster.isWorker ? Number(process.env[WORKER_ENV]) : 0;
const sipEntries = sipListen ? parseSipListen(sipListen) : undefined;
const sipEnv = sipEntries ? { SIP_LISTEN: sipListenOfWorker(sipEntries, workerIndex), RTP_PORTS: '52000-52999' } : {};
/** What bench:calls --sip takes: every service process's SIP address. */
const sipAll = sipEntries
  ? Array.from({ length: workers }, (_, i) => sipListenOfWorker(sipEntries, i)).join(',')
  : undefined;

const StatsRequest = z.object({ type: z.literal('bench:stats'), id: z.number(), gc: z.boolean(), reset: z.boolean() });
const StatsAnswer = z.object({ type: z.literal('bench:stats-answer'), id: z.number(), stats: ServiceStatsSchema });
const Ready = z.object({ type: z.literal('bench:ready'), url: z.string() });

/** Serves GET {stats}[?gc=1] and POST {stats}/reset from `read`; returns its URL. */
async function serveStats(
  read: (o: { gc: boolean; reset: boolean }) => Promise<ServiceStats>,
): Promise<{ url: string; close(): void }> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const reset = req.method === 'POST' && url.pathname === '/reset';
    void read({ gc: url.searchParams.get('gc') === '1', reset }).then((stats) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(stats));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

/** One service process with stub engines: its own stats, for itself or for the primary of --workers. */
async function runService(dataDir: string, setup: boolean, nodeId: string | undefined) {
  const config = loadConfig({
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    API_KEYS: `bench:${key}`,
    LOG_LEVEL: 'error',
    RATE_LIMIT_PER_MINUTE: '0',
    EGRESS_ALLOW: '127.0.0.0/8',
    TWILIO_AUTH_TOKEN: TEST_TWILIO_TOKEN,
    ...(nodeId ? { NODE_ID: nodeId } : {}),
    ...sipEnv,
  });
  const speech = stubSpeechEngines();
  const service = await startService({ config, logger: pino({ level: 'error' }), speech, setup });
  const gc = (globalThis as { gc?: () => void }).gc;
  // 5 ms resolution: fine enough for pacing delays, rare enough not to load the loop itself.
  const LOOP_RESOLUTION_MS = 5;
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  loop.enable();
  /** The histogram holds whole intervals between its timer's runs: the delay is what exceeds the resolution. */
  const late = (ns: number) => Math.max(0, ns / 1e6 - LOOP_RESOLUTION_MS);

  // Each answered turn's latency parts since the last reset, for bench:calls's per-turn breakdown.
  let turns: ServiceStats['turns'] = [];
  service.events.on('turn', ({ callId, parts }) => turns.push({ callId, ...parts }));
  const stats = (o: { gc: boolean; reset: boolean }): ServiceStats => {
    if (o.reset) {
      loop.reset();
      turns = [];
    } else if (o.gc) gc?.();
    const m = process.memoryUsage();
    const c = process.cpuUsage();
    return {
      t: Date.now(),
      calls: service.registry.size,
      rss: m.rss,
      heapUsed: m.heapUsed,
      external: m.external + m.arrayBuffers,
      cpuUserUs: c.user,
      cpuSystemUs: c.system,
      framesEmitted: speech.ttsEngine.framesEmitted,
      loopDelayMs: {
        p50: late(loop.percentile(50)),
        p90: late(loop.percentile(90)),
        p95: late(loop.percentile(95)),
        p99: late(loop.percentile(99)),
        max: late(loop.max),
        count: loop.count,
      },
      turns,
    };
  };
  return { service, stats };
}

/** Several workers' stats as one service's: sums, and the worst worker's event-loop delay. */
function combine(all: ServiceStats[]): ServiceStats {
  const sum = (pick: (s: ServiceStats) => number) => all.reduce((total, s) => total + pick(s), 0);
  const worst = (pick: (s: ServiceStats['loopDelayMs']) => number) => Math.max(...all.map((s) => pick(s.loopDelayMs)));
  return {
    t: Date.now(),
    calls: sum((s) => s.calls),
    rss: sum((s) => s.rss),
    heapUsed: sum((s) => s.heapUsed),
    external: sum((s) => s.external),
    cpuUserUs: sum((s) => s.cpuUserUs),
    cpuSystemUs: sum((s) => s.cpuSystemUs),
    framesEmitted: sum((s) => s.framesEmitted),
    loopDelayMs: {
      p50: worst((l) => l.p50),
      p90: worst((l) => l.p90),
      p95: worst((l) => l.p95),
      p99: worst((l) => l.p99),
      max: worst((l) => l.max),
      count: sum((s) => s.loopDelayMs.count),
    },
    turns: all.flatMap((s) => s.turns),
  };
}

if (workers > 1 && cluster.isPrimary) {
  // Every bench call leaves a recording here (~2 MB per 20 s call): removed when the service stops.
  const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-bench-'));
  const forked = Array.from({ length: workers }, () => undefined as ReturnType<typeof cluster.fork> | undefined);
  let nextId = 0;
  const waiting = new Map<number, { answers: ServiceStats[]; resolve: (stats: ServiceStats) => void }>();
  const ready = (index: number) =>
    new Promise<string>((resolve) => {
      const worker = cluster.fork({
        [DATA_DIR_ENV]: dataDir,
        [WORKER_ENV]: String(index),
        ...(sipListen ? { [SIP_ENV]: sipListen } : {}),
      });
      forked[index] = worker;
      worker.on('message', (message: unknown) => {
        const up = Ready.safeParse(message);
        if (up.success) resolve(up.data.url);
        const answer = StatsAnswer.safeParse(message);
        if (!answer.success) return;
        const pending = waiting.get(answer.data.id);
        if (!pending) return;
        pending.answers.push(answer.data.stats);
        if (pending.answers.length === workers) {
          waiting.delete(answer.data.id);
          pending.resolve(combine(pending.answers));
        }
      });
    });
  // The first worker loads the agents and migrates the store; then the others start.
  const url = await ready(0);
  for (let i = 1; i < workers; i++) await ready(i);
  const stats = await serveStats(
    (o) =>
      new Promise((resolve) => {
        const id = nextId++;
        waiting.set(id, { answers: [], resolve });
        for (const worker of forked) worker?.send({ type: 'bench:stats', id, ...o });
      }),
  );
  console.log(JSON.stringify({ url, key, stats: stats.url, workers, ...(sipAll ? { sip: sipAll } : {}) }));
  const stop = (): void => {
    stats.close();
    let left = workers;
    for (const worker of forked) {
      worker?.once('exit', () => {
        if (--left > 0) return;
        rmSync(dataDir, { recursive: true, force: true });
        process.exit(0);
      });
      worker?.process.kill('SIGTERM');
    }
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
} else if (cluster.isWorker) {
  const { service, stats } = await runService(
    process.env[DATA_DIR_ENV]!,
    workerIndex === 0,
    `bench-stub-w${workerIndex}`,
  );
  process.on('message', (message: unknown) => {
    const request = StatsRequest.safeParse(message);
    if (request.success)
      process.send?.({ type: 'bench:stats-answer', id: request.data.id, stats: stats(request.data) });
  });
  process.send?.({ type: 'bench:ready', url: service.url });
  process.once('SIGTERM', () => void service.close().finally(() => process.exit(0)));
} else {
  const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-bench-'));
  const { service, stats } = await runService(dataDir, true, undefined);
  const server = await serveStats(async (o) => stats(o));
  console.log(JSON.stringify({ url: service.url, key, stats: server.url, ...(sipAll ? { sip: sipAll } : {}) }));
  // No forced GC here: a full collection every 5 s stalled every call's pacing for 30–75 ms.
  setInterval(() => {
    const s = stats({ gc: false, reset: false });
    console.log(
      JSON.stringify({
        t: s.t,
        calls: s.calls,
        rss: s.rss,
        heapUsed: s.heapUsed,
        cpuUserUs: s.cpuUserUs,
        cpuSystemUs: s.cpuSystemUs,
      }),
    );
  }, 5000).unref();
  const stop = (): void => {
    server.close();
    void service.close().finally(() => {
      rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    });
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
