// npm run agent-test -- --url URL --key KEY --agent ID [--version N] [--tests id,id] [--concurrency N] [--junit FILE]
// Runs an agent's tests on a running service, prints what passed and failed (and what changed against
// the previous version's last run), writes JUnit XML when asked, and exits 1 on any failure (2 on a
// usage or service error), so a CI job can gate a prompt or model change on it.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { RunDiffSchema, type RunDiff } from '../src/agent-tests/diff.ts';
import { runJunitXml, runSummary } from '../src/agent-tests/report.ts';
import { TestRunSchema, type TestRun } from '../src/agent-tests/schema.ts';

const USAGE =
  'usage: npm run agent-test -- --url URL --key KEY --agent ID [--version N|latest|production] [--tests ID,ID] [--concurrency N] [--junit FILE] [--timeout-s N]';

const ArgsSchema = z.object({
  url: z.url({ protocol: /^https?$/ }),
  key: z.string().min(1),
  agent: z.string().min(1),
  version: z.string().default('production'),
  tests: z
    .string()
    .optional()
    .transform((list) =>
      list
        ?.split(',')
        .map((id) => id.trim())
        .filter(Boolean),
    ),
  concurrency: z.coerce.number().int().min(1).max(4).default(2),
  junit: z.string().optional(),
  'timeout-s': z.coerce
    .number()
    .int()
    .min(10)
    .max(24 * 3600)
    .default(1800),
});

const ErrorSchema = z.object({ error: z.string(), details: z.string().optional() });
const POLL_MS = 1_000;

async function api(
  args: z.infer<typeof ArgsSchema>,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  const res = await fetch(new URL(path, args.url), {
    method,
    headers: {
      authorization: `Bearer ${args.key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json };
}

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

function problem(what: string, res: { status: number; json: unknown }): never {
  const error = ErrorSchema.safeParse(res.json);
  fail(
    `${what}: HTTP ${res.status}${error.success ? `: ${error.data.error}${error.data.details ? `: ${error.data.details}` : ''}` : ''}`,
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      key: { type: 'string' },
      agent: { type: 'string' },
      version: { type: 'string' },
      tests: { type: 'string' },
      concurrency: { type: 'string' },
      junit: { type: 'string' },
      'timeout-s': { type: 'string' },
    },
  });
  const parsed = ArgsSchema.safeParse(values);
  if (!parsed.success)
    fail(`${parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('\n')}\n${USAGE}`);
  const args = parsed.data;
  const version = /^\d+$/.test(args.version) ? Number(args.version) : args.version;

  const started = await api(args, 'POST', `/v2/agents/${encodeURIComponent(args.agent)}/test-runs`, {
    agent_version: version,
    concurrency: args.concurrency,
    ...(args.tests ? { test_ids: args.tests } : {}),
  });
  if (started.status !== 201) problem('the run could not start', started);
  let run: TestRun = TestRunSchema.parse(started.json);
  process.stdout.write(
    `Running ${run.results.length} test${run.results.length === 1 ? '' : 's'} of agent ${run.agent_id} version ${run.agent_version} (run ${run.run_id})...\n`,
  );
  const until = Date.now() + args['timeout-s'] * 1000;
  while (run.status === 'running') {
    if (Date.now() > until) fail(`run ${run.run_id} had not finished after ${args['timeout-s']} s`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    const read = await api(args, 'GET', `/v2/test-runs/${run.run_id}`);
    if (read.status !== 200) problem('the run could not be read', read);
    run = TestRunSchema.parse(read.json);
  }
  // The previous version's last run, when there is one: what this version changed.
  const diffed = await api(args, 'GET', `/v2/test-runs/${run.run_id}/diff`);
  const diff: RunDiff | null = diffed.status === 200 ? RunDiffSchema.parse(diffed.json) : null;
  process.stdout.write(`${runSummary(run, diff)}\n`);
  if (args.junit) writeFileSync(args.junit, runJunitXml(run));
  process.exit(run.status === 'passed' ? 0 : 1);
}

main().catch((error: unknown) => fail(`agent-test failed: ${(error as Error).message}`));
