// npm run bench:calls -- --transport sim --calls N [--script book-appointment]
// The newcomer's path under load: N outbound calls to a simulated phone running a shipped script
// (it listens before it speaks), placed through the API against the embedded engines and the demo
// agent, in this process. Voice-to-voice per turn as the service measured it (the same number as
// the record's latency.e2e), and whether each conversation came out as its script meant: ended by
// the agent, nobody talking over anybody, the booking the caller gave.
// Writes JSON and Markdown under artifacts/bench/.
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import type { CallRecord } from '../src/records/record.ts';
import { outboundCallRecord, startTarget, targetApi, type TurnParts } from './harness.ts';
import { markdownTable, stats, writeArtifacts } from './report.ts';

const Args = z.object({
  transport: z.literal('sim'),
  calls: z.coerce.number().int().min(1).max(200).default(4),
  script: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/)
    .default('book-appointment'),
  /** Calls placed per second. */
  ramp: z.coerce.number().positive().default(2),
});
const { values } = parseArgs({
  options: Object.fromEntries(
    ['transport', 'calls', 'script', 'ramp', 'engines', 'duration'].map((k) => [k, { type: 'string' as const }]),
  ),
});
if (values.engines !== undefined && values.engines !== 'embedded')
  throw new Error('--transport sim runs the embedded engines only: its scripted callers must be recognised');
const args = Args.parse({ transport: values.transport, calls: values.calls, script: values.script, ramp: values.ramp });

const SIM_NUMBER = '+15550009999';
const loadStart = loadavg();
const target = await startTarget({
  engines: 'embedded',
  env: {
    SIM_NUMBERS: `${SIM_NUMBER}=answer:${args.script}`,
    SIM_ANSWER_DELAY_MS: '200',
    AGENTS_FILE: join(import.meta.dirname, '..', 'media', 'agents', 'demo.json'),
  },
});
const turns: TurnParts[] = [];
target.service?.events.on('turn', ({ callId, parts }) => turns.push({ callId, ...parts }));
console.error(
  `bench:calls --transport sim: ${args.calls} calls to a simulated phone (script ${args.script}), embedded engines, in-process`,
);

const api = targetApi(target);
const simulatedCall = (): Promise<CallRecord> => outboundCallRecord(api, { call_to: SIM_NUMBER, agent_id: 'demo' });

/** Messages that start before the one before them ended: somebody talked over somebody. */
const overlaps = (r: CallRecord) =>
  (r.transcript ?? []).filter((m, i, all) => i > 0 && m.start_at < all[i - 1]!.end_at).length;
const booked = (r: CallRecord) =>
  (r.transcript_with_tool_calls ?? []).some((m) => m.role === 'tool_call_invocation' && m.name === 'book_appointment');

const t0 = performance.now();
const running: Promise<CallRecord>[] = [];
for (let i = 0; i < args.calls; i++) {
  running.push(simulatedCall());
  await new Promise((r) => setTimeout(r, 1000 / args.ramp));
}
const records = await Promise.all(running);
const elapsedS = Math.round((performance.now() - t0) / 100) / 10;
await target.close();

const e2e = stats(turns.map((t) => t.e2e));
const perCallP50 = stats(records.flatMap((r) => (r.latency?.e2e ? [r.latency.e2e.p50] : [])));
const summary = {
  when: new Date().toISOString(),
  args,
  loadAverage: { start: loadStart, end: loadavg() },
  calls: records.length,
  endedByAgent: records.filter((r) => r.disconnection_reason === 'agent_hangup').length,
  booked: records.filter(booked).length,
  overlappingMessages: records.reduce((n, r) => n + overlaps(r), 0),
  turns: turns.length,
  elapsedS,
  e2e,
  perCallP50,
};
const md = [
  `# bench:calls --transport sim — ${args.calls} simulated calls (script ${args.script}), embedded engines`,
  '',
  markdownTable(
    [
      { metric: 'voice-to-voice per turn, as the service measured it (record latency.e2e) (ms)', s: e2e },
      { metric: 'record latency.e2e p50 per call (ms)', s: perCallP50 },
    ]
      .filter((row) => row.s)
      .map((row) => ({
        metric: row.metric,
        p50: row.s!.p50,
        p90: row.s!.p90,
        p95: row.s!.p95,
        p99: row.s!.p99,
        max: row.s!.max,
        n: row.s!.num,
      })),
  ),
  '',
  markdownTable([
    {
      calls: summary.calls,
      'ended by the agent': summary.endedByAgent,
      booked: summary.booked,
      'overlapping messages': summary.overlappingMessages,
      turns: summary.turns,
      'elapsed s': elapsedS,
    },
  ]),
  '',
  `in-process (service and simulated phones share the event loop); load average ${loadStart.map((x) => x.toFixed(2)).join(' ')} at the start, ${summary.loadAverage.end.map((x) => x.toFixed(2)).join(' ')} at the end`,
].join('\n');
const base = writeArtifacts(`calls-sim-${args.script}-${args.calls}`, summary, md);
console.log(md);
console.error(`written: ${base}.{json,md}`);
process.exit(0);
