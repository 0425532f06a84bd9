// npm run bench:calls -- --calls N --duration S [--llm-url URL --model M] [--engines stub|embedded]
//   [--transport twilio|sim|web] (sim: calls to a simulated phone through the API, bench/sim-calls.ts;
//   web: browser-protocol callers beside phone callers in one run, bench/web-calls.ts;
//   sip: SIP phones (INVITE, RTP both ways) beside Twilio callers in one run, bench/sip-calls.ts)
//   [--stt pocketsphinx|moonshine] [--stt-model tiny|base] (the recogniser of an embedded run and its model; the
// agent's defaults otherwise)
//   [--endpointing semantic|silence] (an embedded run's end of turn: silence at 500 ms measures the
//   engines' capacity without semantic waits after digits, which set the p95 of the default)
//   [--log FILE] (an in-process service's debug log: each end-of-turn decision with its words)
//   [--url http://… --key KEY [--stats-url URL]] (with --transport sip also --sip udp:127.0.0.1:PORT)
// N concurrent simulated carrier calls over the Twilio Media Streams protocol, each a scripted
// conversation of recorded phrases with pauses; per-turn voice-to-voice latency, the record's
// latency parts, outbound pacing jitter, late/dropped frames, CPU and memory per call. With
// --stats-url (printed by bench:serve-stub) CPU, memory, event-loop delay and dropped frames are
// the service process's own; the callers' event-loop delay is reported beside them, so a reader
// can tell the service's pacing from the harness's lag.
// Writes JSON, Markdown and SVG under artifacts/bench/.
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { LATENCY_KEYS } from '../src/records/record.ts';
import {
  LoopStalls,
  loadPhrases,
  ownOverhead,
  runCall,
  serviceStats,
  startTarget,
  STUB_ENDPOINT_MS,
  type CallResult,
  type TurnParts,
} from './harness.ts';
import { markdownTable, type SeriesStats, stats, svgChart, writeArtifacts } from './report.ts';

const Args = z.object({
  calls: z.coerce.number().int().min(1).max(1000).default(10),
  duration: z.coerce.number().positive().max(3600).default(30),
  engines: z.enum(['stub', 'embedded']).default('stub'),
  stt: z.enum(['pocketsphinx', 'moonshine']).optional(),
  'stt-model': z.enum(['tiny', 'base']).optional(),
  endpointing: z.enum(['semantic', 'silence']).optional(),
  /** In-process runs: the service's debug log goes to this file. */
  log: z.string().optional(),
  'llm-url': z.url().optional(),
  model: z.string().min(1).optional(),
  url: z.url().optional(),
  key: z.string().min(1).optional(),
  'stats-url': z.url().optional(),
  /** Calls opened per second while ramping up. */
  ramp: z.coerce.number().positive().default(100),
  transport: z.enum(['twilio', 'sim', 'web', 'sip']).default('twilio'),
});
const { values } = parseArgs({
  options: Object.fromEntries(
    [
      'calls',
      'duration',
      'engines',
      'stt',
      'stt-model',
      'endpointing',
      'log',
      'llm-url',
      'model',
      'url',
      'key',
      'stats-url',
      'ramp',
      'transport',
      'script',
      // --transport sip: the SIP address bench:serve-stub -- --sip prints (bench/sip-calls.ts reads it).
      'sip',
    ].map((k) => [k, { type: 'string' as const }]),
  ),
});
// The simulated-phone path is its own run (it exits when done).
if (values.transport === 'sim') await import('./sim-calls.ts');
if (values.transport === 'web') await import('./web-calls.ts');
if (values.transport === 'sip') await import('./sip-calls.ts');
const args = Args.parse(values);
const sttLabel = [args.stt, args['stt-model'], args.endpointing ? `${args.endpointing} end of turn` : undefined]
  .filter(Boolean)
  .join(' ');

const gc = (globalThis as { gc?: () => void }).gc;
const sample = () => {
  gc?.();
  return process.memoryUsage();
};

const loadStart = loadavg();
const target = await startTarget({
  url: args.url,
  key: args.key,
  engines: args.engines,
  stt: args.stt,
  sttModel: args['stt-model'],
  endpointing: args.endpointing,
  logFile: args.log,
  llmUrl: args['llm-url'],
  model: args.model,
});
// The service's own latency parts per turn: from its events in this process, or from serve-stub's stats.
const localTurns: TurnParts[] = [];
target.service?.events.on('turn', ({ callId, parts }) => localTurns.push({ callId, ...parts }));
const inProcess = target.service !== null;
const phrases = loadPhrases({ oneStubTurn: args.engines === 'stub' });
console.error(
  `bench:calls ${args.calls} calls × ${args.duration} s, engines ${args.engines}${sttLabel ? ` (stt ${sttLabel})` : ''}, target ${target.url}${inProcess ? ' (in-process)' : ''}`,
);

// One call first, so JIT, pools and lazily built state are not charged to the measured calls.
const warm = await runCall(target, { phrases, durationMs: 0, pauseMs: [400, 400], seed: 0 });
if (warm.error) throw new Error(`warm-up call failed: ${warm.error}`);
const statsUrl = args['stats-url'];
const svc0 = statsUrl ? await serviceStats(statsUrl, { gc: true }) : null;
const emittedBefore = target.stub?.ttsEngine.framesEmitted ?? svc0?.framesEmitted ?? 0;
const mem0 = sample();
let idle = 0;
let release!: () => void;
const barrier = new Promise<void>((r) => (release = r));
const allIdle = new Promise<void>((resolve) => {
  const tick = setInterval(() => {
    if (idle >= args.calls) {
      clearInterval(tick);
      resolve();
    }
  }, 20);
});
const stalls = new LoopStalls();
const running: Promise<CallResult>[] = [];
for (let i = 0; i < args.calls; i++) {
  running.push(
    runCall(target, {
      phrases,
      durationMs: args.duration * 1000,
      pauseMs: [400, 1200],
      barrier,
      onIdle: () => idle++,
      stalls,
      ...(args.engines === 'stub' ? { hangoverFrames: STUB_ENDPOINT_MS / 20 } : {}),
      seed: i + 1,
    }),
  );
  await new Promise((r) => setTimeout(r, 1000 / args.ramp));
}
// Every call connected and past its greeting: what does an idle call cost?
await Promise.race([allIdle, Promise.all(running)]);
await new Promise((r) => setTimeout(r, 500));
const memIdle = sample();
const svcIdle = statsUrl ? await serviceStats(statsUrl, { gc: true }) : null;
const loop = monitorEventLoopDelay({ resolution: 1 });
loop.enable();
if (statsUrl) await serviceStats(statsUrl, { reset: true });
const svc1 = statsUrl ? await serviceStats(statsUrl) : null;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
stalls.start();
release();
const results = await Promise.all(running);
const elapsedS = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
loop.disable();
stalls.stop();
const svc2 = statsUrl ? await serviceStats(statsUrl) : null;
const memEnd = sample();
const emitted = target.stub
  ? target.stub.ttsEngine.framesEmitted - emittedBefore
  : svc2
    ? svc2.framesEmitted - emittedBefore
    : null;
await target.close();

const all = <K extends 'v2v' | 'v2vVoiced' | 'fromHangoverEnd' | 'jitter' | 'jitterCallersOnTime'>(k: K) =>
  results.flatMap((r) => r[k]);
const v2v = all('v2v');
const overhead = args.engines === 'stub' ? v2v.map((v) => v - STUB_ENDPOINT_MS) : [];
const serviceTurns = svc2?.turns ?? localTurns;
const own = args.engines === 'stub' ? ownOverhead(results, serviceTurns, STUB_ENDPOINT_MS) : [];
const fromRecords = (key: (typeof LATENCY_KEYS)[number]) =>
  results.flatMap((r) => {
    const s = r.record?.latency?.[key];
    return s ? [s.p50] : [];
  });
const received = results.reduce((n, r) => n + r.framesReceived, 0);
const per = (bytes: number) => Math.round((bytes / args.calls / 1024) * 10) / 10;
const ms = (x: number) => Math.round(x * 100) / 100;
/** The histogram holds whole intervals of its 1 ms timer: the delay is what exceeds 1 ms. */
const late = (ns: number) => ms(Math.max(0, ns / 1e6 - 1));
const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
const series: { name: string; unit: string; s: SeriesStats | null }[] = [
  { name: 'voice-to-voice (last speech frame sent → first agent frame)', unit: 'ms', s: stats(v2v) },
  {
    name: 'voice-to-voice heard (last speech frame sent → first agent frame carrying voice)',
    unit: 'ms',
    s: stats(all('v2vVoiced')),
  },
  ...(args.engines === 'stub'
    ? [
        {
          name: `runtime overhead per turn (v2v − ${STUB_ENDPOINT_MS} ms stub VAD hangover)`,
          unit: 'ms',
          s: stats(overhead),
        },
        {
          name: "runtime overhead per turn, from the caller's frame that ends the hangover (callers' late sends not charged)",
          unit: 'ms',
          s: stats(all('fromHangoverEnd')),
        },
        {
          name: "runtime's own overhead per turn (v2v − hangover − the turn's STT final, model request → first speakable chunk and TTS first audio, as the service measured them)",
          unit: 'ms',
          s: stats(own),
        },
      ]
    : []),
  ...LATENCY_KEYS.map((k) => ({ name: `record latency.${k} (per-call p50s)`, unit: 'ms', s: stats(fromRecords(k)) })),
  {
    name: 'hang-up → record final (polled every 50 ms)',
    unit: 'ms',
    s: stats(results.flatMap((r) => (r.finalizeMs === null ? [] : [r.finalizeMs]))),
  },
  {
    name: 'simulated caller audio behind real time at hang-up (harness starvation)',
    unit: 'ms',
    s: stats(results.flatMap((r) => (r.sendLagMs === null ? [] : [r.sendLagMs]))),
  },
  { name: 'outbound pacing jitter |gap − 20 ms|, every gap', unit: 'ms', s: stats(all('jitter')) },
  {
    name: `outbound pacing jitter, gaps no callers' loop stall > ${stalls.thresholdMs} ms touched (the service's own)`,
    unit: 'ms',
    s: stats(all('jitterCallersOnTime')),
  },
  {
    name: `${inProcess ? '' : 'harness (callers) '}event-loop delay during the run`,
    unit: 'ms',
    s:
      loop.count > 0
        ? {
            p50: late(loop.percentile(50)),
            p90: late(loop.percentile(90)),
            p95: late(loop.percentile(95)),
            p99: late(loop.percentile(99)),
            max: late(loop.max),
            num: loop.count,
          }
        : null,
  },
  ...(svc2
    ? [
        {
          name: 'service event-loop delay during the run',
          unit: 'ms',
          s: {
            p50: ms(svc2.loopDelayMs.p50),
            p90: ms(svc2.loopDelayMs.p90),
            p95: ms(svc2.loopDelayMs.p95),
            p99: ms(svc2.loopDelayMs.p99),
            max: ms(svc2.loopDelayMs.max),
            num: svc2.loopDelayMs.count,
          },
        },
      ]
    : []),
];
const cpuPerCall = (us: number) => Math.round((us / 1000 / args.calls / elapsedS) * 100) / 100;
const service =
  svc0 && svcIdle && svc1 && svc2
    ? {
        cpuMsPerCallPerSecond: cpuPerCall(svc2.cpuUserUs + svc2.cpuSystemUs - svc1.cpuUserUs - svc1.cpuSystemUs),
        idleMemoryPerCallKiB: {
          rss: per(svcIdle.rss - svc0.rss),
          heapUsed: per(svcIdle.heapUsed - svc0.heapUsed),
          external: per(svcIdle.external - svc0.external),
        },
        rssMiB: { before: mib(svc0.rss), idle: mib(svcIdle.rss), end: mib(svc2.rss) },
      }
    : null;
const summary = {
  when: new Date().toISOString(),
  args: { ...args, key: args.key ? '***' : undefined },
  inProcess,
  note: inProcess
    ? 'shared 2-core machine; the simulated carriers run in the same process as the service, so CPU and memory include both ends'
    : service
      ? 'shared 2-core machine; service in another process: "service" CPU and memory are its own (from --stats-url), "harness" the callers\''
      : "shared 2-core machine; service in another process: CPU and memory here are the harness only (pass --stats-url for the service's)",
  loadAverage: { start: loadStart, end: loadavg() },
  calls: args.calls,
  errors: results.filter((r) => r.error).map((r) => r.error),
  turns: v2v.length,
  // Turns the service reported its parts for, and how many of the callers' turns were paired with one.
  serviceTurns: serviceTurns.length,
  turnsWithServiceParts: own.length,
  recordsFinal: results.filter((r) => r.record).length,
  turnsMissed: results.reduce((n, r) => n + r.turnsMissed, 0),
  lateFrames: results.reduce((n, r) => n + r.late, 0),
  callersLoopStalls: stalls.count,
  framesReceived: received,
  framesEmittedByStubTts: emitted,
  // Every frame the stub TTS made must reach a caller (they hang up once the marks are echoed).
  droppedFrames: emitted === null ? null : Math.max(0, emitted - received),
  // Each is a barge-in (the caller talked over the agent): the audio it cut was dropped on purpose.
  clearsSent: results.reduce((n, r) => n + r.clears, 0),
  cpuMsPerCallPerSecond: cpuPerCall(cpu.user + cpu.system),
  service,
  idleMemoryPerCallKiB: {
    rss: per(memIdle.rss - mem0.rss),
    heapUsed: per(memIdle.heapUsed - mem0.heapUsed),
    external: per(memIdle.external + memIdle.arrayBuffers - mem0.external - mem0.arrayBuffers),
  },
  endMemoryPerCallKiB: { rss: per(memEnd.rss - mem0.rss), heapUsed: per(memEnd.heapUsed - mem0.heapUsed) },
  gcForced: gc !== undefined,
  elapsedS: Math.round(elapsedS * 10) / 10,
  series: Object.fromEntries(series.map((m) => [m.name, m.s])),
};

const rows = series
  .filter((m) => m.s)
  .map((m) => ({
    metric: `${m.name} (${m.unit})`,
    p50: m.s!.p50,
    p90: m.s!.p90,
    p95: m.s!.p95,
    p99: m.s!.p99,
    max: m.s!.max,
    n: m.s!.num,
  }));
const md = [
  `# bench:calls — ${args.calls} calls × ${args.duration} s, engines ${args.engines}${sttLabel ? ` (stt ${sttLabel})` : ''}`,
  '',
  markdownTable(rows),
  '',
  markdownTable([
    {
      turns: summary.turns,
      'turns missed': summary.turnsMissed,
      ...(args.engines === 'stub'
        ? { 'service turns / paired': `${summary.serviceTurns} / ${summary.turnsWithServiceParts}` }
        : {}),
      'late frames': summary.lateFrames,
      'dropped frames': summary.droppedFrames ?? 'n/a',
      'clears (barge-ins)': summary.clearsSent,
      'frames received': received,
      ...(service
        ? {
            'service CPU ms per call per s': service.cpuMsPerCallPerSecond,
            'service idle RSS KiB/call': service.idleMemoryPerCallKiB.rss,
            'service idle heap KiB/call': service.idleMemoryPerCallKiB.heapUsed,
            'harness CPU ms per call per s': summary.cpuMsPerCallPerSecond,
          }
        : {
            'CPU ms per call per s': summary.cpuMsPerCallPerSecond,
            'idle RSS KiB/call': summary.idleMemoryPerCallKiB.rss,
            'idle heap KiB/call': summary.idleMemoryPerCallKiB.heapUsed,
          }),
      errors: summary.errors.length,
    },
  ]),
  '',
  `${summary.note}; load average ${loadStart.map((x) => x.toFixed(2)).join(' ')} at the start, ${summary.loadAverage.end.map((x) => x.toFixed(2)).join(' ')} at the end`,
].join('\n');
const base = writeArtifacts(
  `calls-${args.engines}${sttLabel ? `-${sttLabel.replaceAll(' ', '-')}` : ''}-${args.calls}x${args.duration}s${inProcess ? '' : '-external'}`,
  summary,
  md,
);
writeFileSync(
  `${base}.svg`,
  svgChart(
    `${args.calls} calls, engines ${args.engines}`,
    series.filter((m) => m.s).map((m) => ({ name: m.name, unit: m.unit, s: m.s! })),
  ),
);
console.log(md);
console.error(`written: ${base}.{json,md,svg}`);
process.exit(0);
