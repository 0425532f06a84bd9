// npm run bench:turns [-- --calls 4 --modes silence,semantic --hints "um,uh"]
// Turn-taking on the phone path: 60 caller turns spoken by flite voices — 36 finished (questions,
// statements, short answers, times) and 24 unfinished, each with a pause of 0.6-1.5 s inside
// (digits being read out, a trailing "and", "um", an open list) — played over Twilio Media
// Streams into the service with the embedded engines and an instant model, once per end-of-turn
// mode. For each mode: premature cut-offs (the agent's voice arrived before the caller's last
// word was sent) and the response gap after finished turns (the caller's last speech frame sent →
// the agent's first frame received: the silence the caller hears, engines included).
// Writes JSON (with what the agent heard in each call) and Markdown under artifacts/bench/.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { z } from 'zod';
import { startService } from '../src/app.ts';
import { muLawEncode } from '../src/audio/g711.ts';
import { TwilioStreamCaller } from '../src/carriers/sim/twilio-stream.ts';
import { loadConfig } from '../src/config.ts';
import { FliteTtsEngine } from '../src/speech/tts/flite.ts';
import { placeInboundCall } from '../test/helpers/phone.ts';
import { TEST_TWILIO_TOKEN } from '../test/helpers/service.ts';
import { trimQuiet } from './harness.ts';
import { markdownTable, stats } from './report.ts';
import { spawnInstantModel } from './stub-engines.ts';

const Args = z.object({
  calls: z.coerce.number().int().min(1).max(12).default(4),
  modes: z.string().default('silence,semantic').transform((s) => s.split(',').map((m) => z.enum(['silence', 'semantic']).parse(m.trim()))),
  /** Phrase hints for the agents' recogniser (stt.phrases), comma-separated. */
  hints: z.string().default('').transform((s) => s.split(',').map((h) => h.trim()).filter(Boolean)),
});
const { values } = parseArgs({ options: { calls: { type: 'string' }, modes: { type: 'string' }, hints: { type: 'string' } } });
const args = Args.parse(values);

const FINISHED = [
  'What time do you open on Saturday?',
  'Can I change my appointment?',
  'Do you take credit cards?',
  'Is the doctor available tomorrow?',
  'How much does a cleaning cost?',
  'Where is your office?',
  'I would like to book an appointment.',
  'My name is Maria Lopez.',
  'I need to cancel my order.',
  'That works for me.',
  'I am calling about my bill.',
  'Please send me a confirmation email.',
  'Yes.',
  'No thank you.',
  'Sure.',
  "That's right.",
  'Next Monday at ten in the morning.',
  'Tomorrow afternoon would be great.',
];
/** Each with its pause, in ms, between the two parts. */
const UNFINISHED: [string, string][] = [
  ['My card number is four one five two', 'seven seven eight nine.'],
  ['My phone number is five five five', 'zero one two three.'],
  ['I want to book a cleaning and', 'a checkup for my son.'],
  ['I was calling because', 'my order never arrived.'],
  ['Um', 'I need to change my address.'],
  ['I would like, uh', 'a table for two.'],
  ['I need eggs, milk,', 'and some bread.'],
  ['The address is twelve Main Street, and', 'the apartment is four.'],
  ["I'd like to come in on", 'Tuesday morning.'],
  ['So the problem is that', 'the app keeps crashing.'],
  ['My account number is two two', 'four six.'],
  ['Could you tell me, um', 'when you close today?'],
];
const PAUSES = [600, 900, 1200, 1500];
const VOICES = ['slt', 'rms', 'awb', 'kal'] as const;

interface Turn {
  kind: 'finished' | 'unfinished';
  parts: Uint8Array[];
  pauseMs: number;
  text: string;
}

/** flite at 8 kHz, quiet trimmed at both ends so the first and last frames sent are speech. */
async function speak(tts: FliteTtsEngine, text: string, voice: string): Promise<Uint8Array> {
  const chunks: Int16Array[] = [];
  for await (const chunk of tts.synthesize(text, { sampleRate: 8000, voiceId: voice })) chunks.push(chunk.samples);
  const all = new Int16Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return muLawEncode(trimQuiet(all, 400));
}

async function buildTurns(): Promise<Turn[]> {
  const tts = new FliteTtsEngine();
  const turns: Turn[] = [];
  for (const [i, text] of FINISHED.entries()) {
    for (const k of [0, 1]) turns.push({ kind: 'finished', parts: [await speak(tts, text, VOICES[(i + k * 2) % VOICES.length]!)], pauseMs: 0, text });
  }
  for (const [i, [a, b]] of UNFINISHED.entries()) {
    for (const k of [0, 1]) {
      const voice = VOICES[(i + k) % VOICES.length]!;
      turns.push({ kind: 'unfinished', parts: [await speak(tts, a, voice), await speak(tts, b, voice)], pauseMs: PAUSES[(i * 2 + k) % PAUSES.length]!, text: `${a} … ${b}` });
    }
  }
  await tts.close();
  // Interleaved so every call gets both kinds.
  return turns.map((t, i) => ({ t, key: (i * 7919) % turns.length })).sort((a, b) => a.key - b.key).map((x) => x.t);
}

interface TurnResult {
  kind: Turn['kind'];
  text: string;
  /** The agent's first frame arrived before the caller's last speech frame was sent. */
  premature: boolean;
  /** Last speech frame sent → first agent frame received, ms; null when the agent never answered. */
  gapMs: number | null;
  /** Milliseconds into the pause inside an unfinished turn at which the agent's voice arrived, when it cut in there. */
  cutAtMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One call speaking its turns one after another, each once the agent has answered and gone quiet. */
async function runCall(url: string, number: string, turns: Turn[]): Promise<{ callId: string; results: TurnResult[] }> {
  const { caller, callId } = await placeInboundCall(url, number, undefined, { history: false });
  let lastAgentFrame = 0;
  let firstAgentFrameSince = (since: number) => (lastAgentFrame >= since ? lastAgentFrame : 0);
  const arrivals: number[] = [];
  caller.on('message', (m) => {
    if (m.event === 'media') {
      lastAgentFrame = performance.now();
      arrivals.push(lastAgentFrame);
    }
  });
  firstAgentFrameSince = (since) => arrivals.find((a) => a >= since) ?? 0;
  const quiet = async (ms: number, timeoutMs = 20_000) => {
    const started = performance.now();
    while (performance.now() - Math.max(lastAgentFrame, started) < ms && performance.now() - started < timeoutMs) await sleep(20);
  };
  await quiet(2_500); // the greeting
  const results: TurnResult[] = [];
  for (const turn of turns) {
    if (caller.closed) break;
    await caller.pause(400);
    const startedAt = performance.now();
    const pauseAt = await speakTurn(caller, turn);
    const lastSpeechAt = caller.frameSentAt(caller.framesSent - 1) ?? performance.now();
    // The answer (or an answer already under way) and its end.
    const deadline = performance.now() + 6_000;
    while (firstAgentFrameSince(startedAt) === 0 && performance.now() < deadline) await sleep(10);
    const first = firstAgentFrameSince(startedAt);
    const premature = first !== 0 && first < lastSpeechAt;
    results.push({ kind: turn.kind, text: turn.text, premature, gapMs: first === 0 ? null : first - lastSpeechAt, ...(premature && pauseAt !== null ? { cutAtMs: Math.round(first - pauseAt) } : {}) });
    // Longer than the longest end-of-turn wait, so a late answer is never taken for the next turn's.
    await quiet(2_500);
  }
  await caller.hangUp();
  return { callId, results };
}

/** What the agent heard in a call: its user messages in order, to see which readings cut in. */
async function heardIn(url: string, callId: string): Promise<string[]> {
  const res = await fetch(`${url}/v2/calls/${callId}`, { headers: { authorization: `Bearer ${key}` } });
  const record = (await res.json()) as { transcript?: { role: string; content: string }[] | null };
  return (record.transcript ?? []).filter((m) => m.role === 'user').map((m) => m.content);
}

/** Speaks the turn's parts with its pause between them; when the pause began (the first part's last frame sent), or null for a turn in one part. */
async function speakTurn(caller: TwilioStreamCaller, turn: Turn): Promise<number | null> {
  let pauseAt: number | null = null;
  for (const [i, part] of turn.parts.entries()) {
    if (i > 0) {
      pauseAt = caller.frameSentAt(caller.framesSent - 1) ?? performance.now();
      await caller.pause(turn.pauseMs);
    }
    await caller.speak(part);
  }
  return pauseAt;
}

const loadStart = loadavg();
const turns = await buildTurns();
const model = await spawnInstantModel();
const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-turns-'));
const key = 'bench-key-0123456789-0123456789-0123';
const config = loadConfig({
  PORT: '0',
  HOST: '127.0.0.1',
  DATA_DIR: dataDir,
  API_KEYS: `bench:${key}`,
  LOG_LEVEL: 'error',
  RATE_LIMIT_PER_MINUTE: '0',
  AGENTS_FILE: '',
  EGRESS_ALLOW: '127.0.0.0/8',
  TWILIO_AUTH_TOKEN: TEST_TWILIO_TOKEN,
});
const service = await startService({ config, logger: pino({ level: 'error' }) });
console.error(`bench:turns: ${turns.length} turns (${turns.filter((t) => t.kind === 'unfinished').length} unfinished) over ${args.calls} calls per mode: ${args.modes.join(', ')}`);

const byMode: Record<string, TurnResult[]> = {};
const heardByMode: Record<string, string[][]> = {};
for (const [m, mode] of args.modes.entries()) {
  const number = `+1555010${String(9000 + m)}`;
  const res = await fetch(`${service.url}/v2/agents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      agent_id: `turns-${mode}`,
      agent_name: `turns ${mode}`,
      llm: { base_url: model.url, model: 'stub' },
      begin_message: 'Hello.',
      inbound_numbers: [number],
      endpointing: { mode },
      ...(args.hints.length > 0 ? { stt: { phrases: args.hints } } : {}),
      inactivity_timeout_ms: 600_000,
    }),
  });
  if (res.status !== 201) throw new Error(`agent: ${res.status} ${await res.text()}`);
  const shares = Array.from({ length: args.calls }, (_, c) => turns.filter((_t, i) => i % args.calls === c));
  const calls = await Promise.all(shares.map((share) => runCall(service.url, number, share)));
  byMode[mode] = calls.flatMap((c) => c.results);
  heardByMode[mode] = await Promise.all(calls.map((c) => heardIn(service.url, c.callId)));
}
await service.close();
await model.close();
rmSync(dataDir, { recursive: true, force: true });

const rows = Object.entries(byMode).map(([mode, results]) => {
  const unfinished = results.filter((r) => r.kind === 'unfinished');
  const finished = results.filter((r) => r.kind === 'finished');
  const cut = results.filter((r) => r.premature).length;
  const gaps = stats(finished.flatMap((r) => (r.gapMs === null || r.premature ? [] : [r.gapMs])));
  return {
    mode,
    turns: results.length,
    'premature cut-offs': `${cut} (${((cut / results.length) * 100).toFixed(1)}%)`,
    'of unfinished turns cut': `${unfinished.filter((r) => r.premature).length} / ${unfinished.length}`,
    'gap after finished turns p50 (ms)': gaps?.p50 ?? 'n/a',
    'p90 (ms)': gaps?.p90 ?? 'n/a',
    unanswered: results.filter((r) => r.gapMs === null).length,
  };
});
const md = [
  `# bench:turns — ${turns.length} caller turns per mode, ${args.calls} calls at once, embedded engines, instant model`,
  '',
  markdownTable(rows),
  '',
  `Cut turns: ${Object.entries(byMode)
    .map(([mode, r]) => `${mode}: ${r.filter((x) => x.premature).map((x) => `${JSON.stringify(x.text)}${x.cutAtMs === undefined ? '' : ` (${x.cutAtMs} ms into the pause)`}`).join(', ') || 'none'}`)
    .join('; ')}`,
  '',
  `load average ${loadStart.map((x) => x.toFixed(2)).join(' ')} at the start, ${loadavg().map((x) => x.toFixed(2)).join(' ')} at the end`,
].join('\n');
const dir = join(import.meta.dirname, '..', 'artifacts', 'bench');
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'turns.json'), `${JSON.stringify({ when: new Date().toISOString(), args, rows, byMode, heard: heardByMode }, null, 2)}\n`);
writeFileSync(join(dir, 'turns.md'), `${md}\n`);
console.log(md);
process.exit(0);
