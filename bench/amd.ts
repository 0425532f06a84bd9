// npm run bench:amd [-- --calls 3]
// Answering-machine detection: (1) the detection set (test/support/machine-greetings.ts, 20 machine
// greetings and 17 people) through the real VAD and recogniser on the phone path: accuracy, and how
// long after its spoken greeting ended each machine was known; (2) the delay detection adds for a
// person: simulated people (script book-appointment) called by the demo agent with and without
// `voicemail.detect`, side by side in one run: when the agent's greeting starts and voice-to-voice.
// Writes JSON and Markdown under artifacts/bench/.
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import type { CallRecord } from '../src/records/record.ts';
import { MoonshineEngine } from '../src/speech/stt/moonshine/engine.ts';
import { SileroVadEngine } from '../src/speech/vad/silero.ts';
import { detect, machineGreetingSet, type Detection } from '../test/support/machine-greetings.ts';
import { outboundCallRecord, startTarget, targetApi } from './harness.ts';
import { markdownTable, stats } from './report.ts';

const { values } = parseArgs({ options: { calls: { type: 'string' } } });
const calls = z.coerce.number().int().min(1).max(20).default(3).parse(values.calls);
const loadStart = loadavg();

// (1) The detection set.
const vad = new SileroVadEngine();
const stt = new MoonshineEngine({ workers: 1 });
await (await stt.open({ sampleRate: 8000, language: 'en-US' })).close();
const detections: Detection[] = [];
for (const greeting of await machineGreetingSet()) detections.push(await detect(greeting, { vad, stt }));
await vad.close();
await stt.close();
const right = detections.filter((d) => (d.answerer?.by ?? 'none') === d.greeting.truth);
const machines = detections.filter((d) => d.greeting.truth === 'machine' && d.answerer?.by === 'machine');
const evidence = Object.fromEntries(
  ['words', 'long_greeting', 'beep'].map((e) => [
    e,
    machines.filter((d) => d.answerer?.by === 'machine' && d.answerer.evidence === e).length,
  ]),
);

// (2) People answering, with and without detection.
const SIM_NUMBER = '+15550009998';
const target = await startTarget({
  engines: 'embedded',
  env: {
    SIM_NUMBERS: `${SIM_NUMBER}=answer:book-appointment`,
    SIM_ANSWER_DELAY_MS: '200',
    AGENTS_FILE: join(import.meta.dirname, '..', 'media', 'agents', 'demo.json'),
  },
});
const api = targetApi(target);
const demo = (await api('GET', '/v2/agents/demo')) as Record<string, unknown>;
const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
await api('POST', '/v2/agents', {
  ...config,
  agent_id: 'demo-amd',
  voicemail: { detect: true, action: 'leave_message', message: 'Please call the clinic back.' },
});
const call = (agentId: string): Promise<CallRecord> =>
  outboundCallRecord(api, { call_to: SIM_NUMBER, agent_id: agentId });
const placed: Promise<CallRecord>[] = [];
for (let i = 0; i < calls; i++) {
  placed.push(call('demo-amd'), call('demo'));
  await new Promise((r) => setTimeout(r, 500));
}
const records = await Promise.all(placed);
await target.close();
const group = (detecting: boolean) => records.filter((_, i) => i % 2 === (detecting ? 0 : 1));
const greetingStart = (rs: CallRecord[]) => stats(rs.map((r) => (r.transcript?.[0]?.start_at ?? Number.NaN) * 1000));
const e2e = (rs: CallRecord[]) => stats(rs.flatMap((r) => (r.latency?.e2e ? [r.latency.e2e.p50] : [])));

const summary = {
  when: new Date().toISOString(),
  loadAverage: { start: loadStart, end: loadavg() },
  set: {
    greetings: detections.length,
    accuracy: right.length / detections.length,
    wrong: detections.filter((d) => !right.includes(d)).map((d) => `${d.greeting.name} → ${d.answerer?.by ?? 'none'}`),
  },
  machineDecisionAfterGreetingMs: stats(machines.map((d) => d.afterGreetingMs!)),
  evidence,
  people: {
    calls,
    detecting: {
      endedAsVoicemail: group(true).filter((r) => r.disconnection_reason === 'voicemail_reached').length,
      greetingStartMs: greetingStart(group(true)),
      e2eP50PerCall: e2e(group(true)),
    },
    notDetecting: { greetingStartMs: greetingStart(group(false)), e2eP50PerCall: e2e(group(false)) },
  },
};
const row = (metric: string, s: ReturnType<typeof stats>) => ({
  metric,
  p50: s?.p50 ?? '',
  p90: s?.p90 ?? '',
  max: s?.max ?? '',
  n: s?.num ?? 0,
});
const md = [
  `# bench:amd — answering-machine detection`,
  '',
  `Detection set: ${detections.length} greetings, ${(summary.set.accuracy * 100).toFixed(1)}% right; machines found by words ${evidence.words}, long greeting ${evidence.long_greeting}, beep ${evidence.beep}. Wrong: ${summary.set.wrong.join(', ') || 'none'}.`,
  '',
  markdownTable([
    row('machine known, ms after its spoken greeting ended (negative: before)', summary.machineDecisionAfterGreetingMs),
    row('person, detection on: agent greeting starts (ms after answer)', summary.people.detecting.greetingStartMs),
    row('person, detection off: agent greeting starts (ms after answer)', summary.people.notDetecting.greetingStartMs),
    row('person, detection on: voice-to-voice p50 per call (ms)', summary.people.detecting.e2eP50PerCall),
    row('person, detection off: voice-to-voice p50 per call (ms)', summary.people.notDetecting.e2eP50PerCall),
  ]),
  '',
  `${calls} people called with detection and ${calls} without, side by side in-process; ${summary.people.detecting.endedAsVoicemail} taken for a machine. Load average ${loadStart.map((x) => x.toFixed(2)).join(' ')} at the start, ${summary.loadAverage.end.map((x) => x.toFixed(2)).join(' ')} at the end.`,
].join('\n');
const dir = join(import.meta.dirname, '..', 'artifacts', 'bench');
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'amd.json'), `${JSON.stringify(summary, null, 2)}\n`);
writeFileSync(join(dir, 'amd.md'), `${md}\n`);
console.log(md);
process.exit(0);
