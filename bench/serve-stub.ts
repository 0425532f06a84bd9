// npm run bench:serve-stub -- [--port P]: the service with stub speech engines in its own
// process, so bench:calls --url … --engines stub can drive it from another process (the
// harness then does not share the service's one JS thread). Prints its URL and key, then every
// 5 s one JSON line of its own CPU and memory, for CPU and memory per call without the callers.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { z } from 'zod';
import { startService } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { stubSpeechEngines } from './stub-engines.ts';

const { values } = parseArgs({ options: { port: { type: 'string' } } });
const port = z.coerce.number().int().min(0).max(65535).default(0).parse(values.port);
const key = 'bench-key-0123456789';
const config = loadConfig({ PORT: String(port), HOST: '127.0.0.1', DATA_DIR: mkdtempSync(join(tmpdir(), 'voicecall-bench-')), API_KEYS: `bench:${key}`, LOG_LEVEL: 'error', RATE_LIMIT_PER_MINUTE: '0' });
const service = await startService({ config, logger: pino({ level: 'error' }), speech: stubSpeechEngines() });
console.log(JSON.stringify({ url: service.url, key }));
const gc = (globalThis as { gc?: () => void }).gc;
setInterval(() => {
  gc?.();
  const m = process.memoryUsage();
  const c = process.cpuUsage();
  console.log(JSON.stringify({ t: Date.now(), calls: service.registry.size, rss: m.rss, heapUsed: m.heapUsed, cpuUserUs: c.user, cpuSystemUs: c.system }));
}, 5000).unref();
process.on('SIGTERM', () => void service.close().then(() => process.exit(0)));
