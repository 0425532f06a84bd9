// npm run bench:serve-stub -- [--port P]: the service with stub speech engines in its own
// process, so bench:calls --url … --engines stub can drive it from another process (the
// harness then does not share the service's one JS thread). Prints one JSON line with its URL,
// key and a stats URL, then every 5 s one JSON line of its own CPU and memory.
// GET {stats}?gc=1 answers the service process's own CPU, memory, event-loop delay since the
// last POST {stats}/reset, and the frames its stub TTS made: bench:calls --stats-url reads it to
// report CPU and memory per call and dropped frames for the service alone.
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
import { loadConfig } from '../src/config.ts';
import { TEST_TWILIO_TOKEN } from '../test/helpers/service.ts';
import type { ServiceStats } from './harness.ts';
import { stubSpeechEngines } from './stub-engines.ts';

const { values } = parseArgs({ options: { port: { type: 'string' } } });
const port = z.coerce.number().int().min(0).max(65535).default(0).parse(values.port);
const key = 'bench-key-0123456789-0123456789-0123';
// Every bench call leaves a recording here (~2 MB per 20 s call): removed when the service stops.
const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-bench-'));
const config = loadConfig({ PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, API_KEYS: `bench:${key}`, LOG_LEVEL: 'error', RATE_LIMIT_PER_MINUTE: '0', EGRESS_ALLOW: '127.0.0.0/8', TWILIO_AUTH_TOKEN: TEST_TWILIO_TOKEN });
const speech = stubSpeechEngines();
const service = await startService({ config, logger: pino({ level: 'error' }), speech });
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
const stats = (): ServiceStats => {
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
    loopDelayMs: { p50: late(loop.percentile(50)), p90: late(loop.percentile(90)), p95: late(loop.percentile(95)), p99: late(loop.percentile(99)), max: late(loop.max), count: loop.count },
    turns,
  };
};
const statsServer = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  if (req.method === 'POST' && url.pathname === '/reset') {
    loop.reset();
    turns = [];
  } else if (url.searchParams.get('gc') === '1') gc?.();
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(stats()));
});
await new Promise<void>((resolve) => statsServer.listen(0, '127.0.0.1', resolve));
console.log(JSON.stringify({ url: service.url, key, stats: `http://127.0.0.1:${(statsServer.address() as AddressInfo).port}` }));
// No forced GC here: a full collection every 5 s stalled every call's pacing for 30–75 ms.
setInterval(() => {
  const s = stats();
  console.log(JSON.stringify({ t: s.t, calls: s.calls, rss: s.rss, heapUsed: s.heapUsed, cpuUserUs: s.cpuUserUs, cpuSystemUs: s.cpuSystemUs }));
}, 5000).unref();
const stop = (): void => {
  statsServer.close();
  void service.close().finally(() => {
    rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  });
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
