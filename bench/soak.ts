// npm run bench:soak -- [--calls 1000] [--max-minutes M] [--url … --key …]
// Short calls one after another against stub engines (in-process unless --url): RSS and open
// handles sampled as it goes; RSS after the first 100 calls against RSS after all of them.
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { loadPhrases, runCall, startTarget } from './harness.ts';
import { markdownTable, writeArtifacts } from './report.ts';

const Args = z.object({
  calls: z.coerce.number().int().min(1).max(100_000).default(1000),
  'max-minutes': z.coerce.number().positive().default(60),
  url: z.url().optional(),
  key: z.string().min(1).optional(),
});
const { values } = parseArgs({
  options: Object.fromEntries(['calls', 'max-minutes', 'url', 'key'].map((k) => [k, { type: 'string' as const }])),
});
const args = Args.parse(values);

const gc = (globalThis as { gc?: () => void }).gc;
const target = await startTarget({ url: args.url, key: args.key, engines: 'stub', beginMessage: 'Hi.', ttsFrames: 5 });
// Short calls: a 100 ms greeting, 400 ms of the shortest phrase, a 100 ms reply, hang up.
const phrases = [
  loadPhrases()
    .sort((a, b) => a.length - b.length)[0]!
    .subarray(0, 8000 * 0.4),
];
const handles = () => {
  const counts: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) counts[r] = (counts[r] ?? 0) + 1;
  return counts;
};
interface Sample {
  calls: number;
  rssMiB: number;
  heapMiB: number;
  handles: Record<string, number>;
  seconds: number;
}
const samples: Sample[] = [];
const started = performance.now();
const take = (calls: number) => {
  gc?.();
  const m = process.memoryUsage();
  const s = {
    calls,
    rssMiB: Math.round((m.rss / 2 ** 20) * 10) / 10,
    heapMiB: Math.round((m.heapUsed / 2 ** 20) * 10) / 10,
    handles: handles(),
    seconds: Math.round((performance.now() - started) / 100) / 10,
  };
  samples.push(s);
  console.error(`${calls} calls: rss ${s.rssMiB} MiB, heap ${s.heapMiB} MiB, handles ${JSON.stringify(s.handles)}`);
};
take(0);
let done = 0;
let failed = 0;
const deadline = started + args['max-minutes'] * 60_000;
while (done < args.calls && performance.now() < deadline) {
  const r = await runCall(target, { phrases, durationMs: 0, pauseMs: [100, 100], seed: done });
  if (r.error || !r.record) failed++;
  done++;
  if (done % 50 === 0 || done === 100) take(done);
}
if (samples.at(-1)!.calls !== done) take(done);
const after100 = samples.find((s) => s.calls === 100);
const last = samples.at(-1)!;
const growth = after100 ? Math.round(((last.rssMiB - after100.rssMiB) / after100.rssMiB) * 1000) / 10 : null;
const summary = {
  when: new Date().toISOString(),
  requested: args.calls,
  done,
  failed,
  gcForced: gc !== undefined,
  rssGrowthAfter100Percent: growth,
  samples,
};
const md = [
  `# bench:soak — ${done} of ${args.calls} sequential calls (${failed} failed), stub engines`,
  '',
  markdownTable(
    samples
      .filter((s) => s.calls === 0 || s.calls === 100 || s.calls % 250 === 0 || s === last)
      .map((s) => ({
        calls: s.calls,
        'RSS MiB': s.rssMiB,
        'heap MiB': s.heapMiB,
        handles: Object.entries(s.handles)
          .map(([k, v]) => `${k}:${v}`)
          .join(' '),
        s: s.seconds,
      })),
  ),
  '',
  `RSS after all ${done} calls vs after the first 100: ${growth === null ? 'n/a (fewer than 100 calls)' : `${growth > 0 ? '+' : ''}${growth}%`}`,
].join('\n');
writeArtifacts('soak', summary, md);
console.log(md);
// Written before closing: the service's 30 s stream-connect timers outlive close() (see report).
await target.close();
process.exit(0);
