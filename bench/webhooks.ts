// npm run bench:webhooks -- [--calls N] [--concurrency C]: how long a call's state change takes to
// reach a webhook receiver. Calls are placed through POST /v2/calls with no carrier, so each ends
// at once (not_connected): the record's end_timestamp is the moment of the change, and the
// receiver (an HTTP server on 127.0.0.1 in this process, sharing its thread with the service)
// stamps when call_ended arrives.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { z } from 'zod';
import { startService } from '../src/app.ts';
import type { CallRecord } from '../src/records/record.ts';
import { loadConfig } from '../src/config.ts';
import { stubSpeechEngines } from './stub-engines.ts';

const { values } = parseArgs({ options: { calls: { type: 'string' }, concurrency: { type: 'string' } } });
const calls = z.coerce.number().int().min(1).max(10_000).default(200).parse(values.calls);
const concurrency = z.coerce.number().int().min(1).max(100).default(4).parse(values.concurrency);

const arrived = new Map<string, number>();
const receiver = createServer((req, res) => {
  let body = '';
  req.on('data', (d: Buffer) => (body += d.toString()));
  req.on('end', () => {
    const at = Date.now();
    const message = JSON.parse(body) as { event: string; call: CallRecord };
    if (message.event === 'call_ended') arrived.set(message.call.call_id, at - (message.call.end_timestamp ?? at));
    res.writeHead(200).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

const key = 'bench-key-0123456789-0123456789-0123';
const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-bench-webhooks-'));
const config = loadConfig({
  PORT: '0',
  HOST: '127.0.0.1',
  DATA_DIR: dataDir,
  API_KEYS: `bench:${key}`,
  LOG_LEVEL: 'error',
  RATE_LIMIT_PER_MINUTE: '0',
  EGRESS_ALLOW: '127.0.0.0/8',
});
const service = await startService({ config, logger: pino({ level: 'error' }), speech: stubSpeechEngines() });
const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
await fetch(`${service.url}/v2/webhook-settings`, {
  method: 'PUT',
  headers,
  body: JSON.stringify({ webhook_url: hookUrl, events: ['call_ended'] }),
});

let next = 0;
const placed: string[] = [];
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < calls) {
      next++;
      const res = await fetch(`${service.url}/v2/calls`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ agent_id: 'demo', call_from: '+14155550100', call_to: '+14155550111' }),
      });
      placed.push(((await res.json()) as { call_id: string }).call_id);
    }
  }),
);
const deadline = Date.now() + 30_000;
while (arrived.size < placed.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
await service.close();
receiver.close();
rmSync(dataDir, { recursive: true, force: true });

const ms = [...arrived.values()].sort((a, b) => a - b);
const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? NaN;
process.stdout.write(
  `${JSON.stringify({ bench: 'webhooks', calls: placed.length, delivered: ms.length, concurrency, state_change_to_receiver_ms: { p50: at(0.5), p95: at(0.95), max: ms.at(-1) ?? NaN } })}\n`,
);
