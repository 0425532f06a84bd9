// npm run bench:calls -- --transport web [--calls 2] [--duration 40]
// The browser path beside the phone path, in one run: N browser-protocol callers (/media/web,
// 16 kHz PCM16, sending every 20 ms as a page does, silence between phrases) and N Twilio-protocol
// callers, at once, against the in-process service with the embedded engines and the demo model.
// Each speaks the fixture phrases with 0.4-1.2 s pauses and waits for the agent's answer to play
// (its marks). Per transport: voice-to-voice at the caller (last speech frame sent → first agent
// frame received) and the records' latency.e2e; then the difference of the medians.
// Writes JSON and Markdown under artifacts/bench/.
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { z } from 'zod';
import { decodeWav } from '../src/audio/wav.ts';
import { CallRecordSchema, type CallRecord } from '../src/records/record.ts';
import { loadPhrases, runCall, startTarget, trimQuiet, type Target } from './harness.ts';
import { markdownTable, stats, writeArtifacts } from './report.ts';

const Args = z.object({
  transport: z.literal('web'),
  calls: z.coerce.number().int().min(1).max(50).default(2),
  duration: z.coerce.number().positive().max(3600).default(40),
});
const { values } = parseArgs({
  options: Object.fromEntries(
    ['transport', 'calls', 'duration', 'engines'].map((k) => [k, { type: 'string' as const }]),
  ),
});
if (values.engines !== undefined && values.engines !== 'embedded')
  throw new Error('--transport web runs the embedded engines only');
const args = Args.parse({ transport: values.transport, calls: values.calls, duration: values.duration });

const FRAME = 320; // 20 ms at 16 kHz
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The 16 kHz fixture phrases, quiet trimmed at both ends so the last frame sent is speech. */
function phrases16k(): Int16Array[] {
  const dir = join(import.meta.dirname, '..', 'media', 'fixtures');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.16k.wav'))
    .sort()
    .map((f) => trimQuiet(decodeWav(readFileSync(join(dir, f)), 16000).samples, 300));
}

interface WebResult {
  callId: string;
  v2v: number[];
  record: CallRecord | null;
  error: string | null;
}

/**
 * A page's call without the page: frames out every 20 ms from a queue (silence when empty), agent audio "played" in
 * real time, marks echoed once played.
 */
async function webCall(target: Target, phrases: Int16Array[], durationMs: number, seed: number): Promise<WebResult> {
  const result: WebResult = { callId: '', v2v: [], record: null, error: null };
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${target.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${target.key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return res.json() as Promise<unknown>;
  };
  try {
    const created = z
      .object({ call_id: z.string(), access_token: z.string(), websocket_url: z.string() })
      .parse(await api('POST', '/v2/web-calls', { agent_id: target.agentId }));
    result.callId = created.call_id;
    const ws = new WebSocket(created.websocket_url);
    await new Promise<void>((resolve, reject) => ws.once('open', () => resolve()).once('error', reject));
    const queue: Int16Array[] = [];
    const silence = new Int16Array(FRAME);
    let sent = 0;
    let lastSpeechSentAt = 0;
    const arrivals: number[] = [];
    let playEnd = 0;
    let playedEnds = 0;
    ws.on('message', (data, isBinary) => {
      const now = performance.now();
      if (isBinary) {
        arrivals.push(now);
        playEnd = Math.max(playEnd, now) + 20;
        return;
      }
      const m = JSON.parse(data.toString()) as { type: string; name?: string };
      if (m.type === 'mark') {
        setTimeout(
          () => {
            if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'mark', name: m.name }));
            if (m.name?.endsWith(':end')) playedEnds++;
          },
          Math.max(0, playEnd - now),
        );
      } else if (m.type === 'clear') playEnd = now;
    });
    ws.send(JSON.stringify({ type: 'start', access_token: created.access_token }));
    const started = performance.now();
    const tick = () => {
      if (ws.readyState !== WebSocket.OPEN) return;
      const frame = queue.shift();
      ws.send(Buffer.from((frame ?? silence).buffer), { binary: true });
      if (frame) lastSpeechSentAt = performance.now();
      sent++;
      setTimeout(tick, Math.max(0, started + sent * 20 - performance.now()));
    };
    tick();
    const until = async (cond: () => boolean, ms: number) => {
      const end = performance.now() + ms;
      while (!cond() && performance.now() < end) await sleep(20);
      return cond();
    };
    if (!(await until(() => playedEnds >= 1, 20_000))) throw new Error('no greeting');
    let rnd = seed;
    const random = () => (rnd = (rnd * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const end = performance.now() + durationMs;
    let turn = 0;
    while (performance.now() < end && ws.readyState === WebSocket.OPEN) {
      await sleep(400 + random() * 800);
      const phrase = phrases[(seed + turn++) % phrases.length]!;
      for (let i = 0; i < phrase.length; i += FRAME) {
        const frame = new Int16Array(FRAME);
        frame.set(phrase.subarray(i, i + FRAME));
        queue.push(frame);
      }
      const endsBefore = playedEnds;
      await until(() => queue.length === 0, 30_000);
      const spokeAt = lastSpeechSentAt;
      if (await until(() => arrivals.some((a) => a > spokeAt), 15_000))
        result.v2v.push(arrivals.find((a) => a > spokeAt)! - spokeAt);
      await until(() => playedEnds > endsBefore, 30_000);
    }
    ws.send(JSON.stringify({ type: 'hangup' }));
    await until(() => ws.readyState === WebSocket.CLOSED, 5_000);
    for (let i = 0; i < 100; i++) {
      const record = CallRecordSchema.parse(await api('GET', `/v2/calls/${result.callId}`));
      if (record.call_status === 'ended') {
        result.record = record;
        break;
      }
      await sleep(50);
    }
  } catch (error) {
    result.error = (error as Error).message;
  }
  return result;
}

const loadStart = loadavg();
const target = await startTarget({ engines: 'embedded' });
console.error(
  `bench:calls --transport web: ${args.calls} browser-protocol and ${args.calls} Twilio-protocol calls × ${args.duration} s at once, embedded engines, in-process`,
);
const web16k = phrases16k();
const ulaw = loadPhrases();
const [web, phone] = await Promise.all([
  Promise.all(Array.from({ length: args.calls }, (_, i) => webCall(target, web16k, args.duration * 1000, i + 1))),
  Promise.all(
    Array.from({ length: args.calls }, (_, i) =>
      runCall(target, { phrases: ulaw, durationMs: args.duration * 1000, pauseMs: [400, 1200], seed: i + 101 }),
    ),
  ),
]);
await target.close();

const e2eOf = (records: (CallRecord | null)[]) =>
  stats(records.flatMap((r) => (r?.latency?.e2e ? [r.latency.e2e.p50] : [])));
const rows = [
  {
    transport: 'browser (/media/web)',
    v2v: stats(web.flatMap((r) => r.v2v)),
    e2e: e2eOf(web.map((r) => r.record)),
    errors: web.filter((r) => r.error).length,
  },
  {
    transport: 'phone (/media/twilio)',
    v2v: stats(phone.flatMap((r) => r.v2v)),
    e2e: e2eOf(phone.map((r) => r.record)),
    errors: phone.filter((r) => r.error).length,
  },
];
const difference = rows[0]!.v2v && rows[1]!.v2v ? Math.round((rows[0]!.v2v.p50 - rows[1]!.v2v.p50) * 10) / 10 : null;
const md = [
  `# bench:calls --transport web — ${args.calls} browser and ${args.calls} phone calls × ${args.duration} s at once, embedded engines`,
  '',
  markdownTable(
    rows.map((r) => ({
      transport: r.transport,
      'v2v at the caller p50 (ms)': r.v2v?.p50 ?? 'n/a',
      p95: r.v2v?.p95 ?? 'n/a',
      turns: r.v2v?.num ?? 0,
      'record latency.e2e per-call p50s, median (ms)': r.e2e?.p50 ?? 'n/a',
      errors: r.errors,
    })),
  ),
  '',
  `browser − phone, v2v medians: ${difference} ms (goal: within 100 ms)`,
  '',
  `in-process; load average ${loadStart.map((x) => x.toFixed(2)).join(' ')} at the start, ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')} at the end`,
].join('\n');
writeArtifacts(
  `calls-web-${args.calls}x${args.duration}s`,
  {
    when: new Date().toISOString(),
    args,
    rows,
    difference,
    errors: [...web, ...phone].flatMap((r) => (r.error ? [r.error] : [])),
  },
  md,
);
console.log(md);
process.exit(0);
