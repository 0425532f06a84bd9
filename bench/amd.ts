// npm run bench:amd [-- --calls 3]
// Answering-machine detection: (1) the detection set (test/support/machine-greetings.ts, 20 machine
// greetings and 17 people) through the real VAD and recogniser on the phone path: accuracy, and how
// long after its spoken greeting ended each machine was known; (2) the delay detection adds for a
// person: simulated people (script book-appointment) called by the demo agent with and without
// `voicemail.detect`, side by side in one run: when the agent's greeting starts and voice-to-voice;
// (3) people who answer "Hello?" and wait (media/sim-scripts/hello-*.json, four voices), called
// with detection on by an agent with a begin message and by one that waits for the callee: the gap
// from the end of their "Hello?" to the agent's voice; and simulated machines (voicemail.json)
// called by the first, which must still end voicemail_reached with the message after the beep.
// Writes JSON and Markdown under artifacts/bench/.
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { decodeWav } from '../src/audio/wav.ts';
import type { CallRecord } from '../src/records/record.ts';
import { MoonshineEngine } from '../src/speech/stt/moonshine/engine.ts';
import { SileroVadEngine } from '../src/speech/vad/silero.ts';
import { detect, machineGreetingSet, type Detection } from '../test/support/machine-greetings.ts';
import { loudBounds, outboundCallRecord, startTarget, targetApi } from './harness.ts';
import { markdownTable, stats, writeArtifacts } from './report.ts';

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
process.stderr.write(`detection set done (${detections.length}); calling people and machines\n`);
const right = detections.filter((d) => (d.answerer?.by ?? 'none') === d.greeting.truth);
const machineTotal = detections.filter((d) => d.greeting.truth === 'machine').length;
const machines = detections.filter((d) => d.greeting.truth === 'machine' && d.answerer?.by === 'machine');
const evidence = Object.fromEntries(
  ['words', 'long_greeting', 'beep'].map((e) => [
    e,
    machines.filter((d) => d.answerer?.by === 'machine' && d.answerer.evidence === e).length,
  ]),
);

// (2) People answering, with and without detection.
const SIM_NUMBER = '+15550009998';
const HELLO_VOICES = ['kal', 'rms', 'slt', 'awb'] as const;
const helloNumber = (i: number) => `+1555000997${i}`;
const MACHINE_NUMBER = '+15550009969';
const scripts = join(import.meta.dirname, '..', 'media', 'sim-scripts');
/**
 * Where each callee's "Hello?" ends on the call's clock: its script waits 300 ms, then says it (flite's trailing quiet
 * not counted).
 */
const helloEndS = HELLO_VOICES.map((voice) => {
  const wav = decodeWav(readFileSync(join(scripts, 'prompts', `hello-${voice}.8k-ulaw.wav`)), 8000);
  return 0.3 + loudBounds(wav.samples, 300).to / 8000;
});
const target = await startTarget({
  engines: 'embedded',
  env: {
    SIM_NUMBERS: [
      `${SIM_NUMBER}=answer:book-appointment`,
      ...HELLO_VOICES.map((voice, i) => `${helloNumber(i)}=answer:hello-${voice}`),
      `${MACHINE_NUMBER}=voicemail:voicemail`,
    ].join(','),
    SIM_ANSWER_DELAY_MS: '200',
    AGENTS_FILE: join(import.meta.dirname, '..', 'media', 'agents', 'demo.json'),
  },
});
const api = targetApi(target);
const demo = (await api('GET', '/v2/agents/demo')) as Record<string, unknown>;
const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
const VOICEMAIL = { detect: true, action: 'leave_message', message: 'Please call the clinic back.' };
await api('POST', '/v2/agents', { ...config, agent_id: 'demo-amd', voicemail: VOICEMAIL });
// An agent that waits for the callee to speak first (no begin message): the model answers the "Hello?".
await api('POST', '/v2/agents', { ...config, agent_id: 'demo-amd-waits', begin_message: '', voicemail: VOICEMAIL });
const call = (agentId: string, to = SIM_NUMBER): Promise<CallRecord> =>
  outboundCallRecord(api, { call_to: to, agent_id: agentId });
const placed: Promise<CallRecord>[] = [];
for (let i = 0; i < calls; i++) {
  placed.push(call('demo-amd'), call('demo'));
  await new Promise((r) => setTimeout(r, 500));
}
const records = await Promise.all(placed);

// (3) People who answer "Hello?" and wait, and machines, one call at a time (each is a few seconds).
interface HelloCall {
  agent: string;
  voice: string;
  /** From the end of the "Hello?" to the first agent message's start, ms (negative: the agent was already talking). */
  gapMs: number;
  reason: string;
}
const helloCalls: HelloCall[] = [];
for (let round = 0; round < calls; round++) {
  for (const agent of ['demo-amd', 'demo-amd-waits']) {
    for (const [i, voice] of HELLO_VOICES.entries()) {
      const r = await call(agent, helloNumber(i));
      const first = r.transcript?.find((m) => m.role === 'agent');
      helloCalls.push({
        agent,
        voice,
        gapMs: first ? Math.round((first.start_at - helloEndS[i]!) * 1000) : Number.NaN,
        reason: r.disconnection_reason ?? 'none',
      });
    }
  }
}
const machineCalls: CallRecord[] = [];
for (let round = 0; round < calls; round++) machineCalls.push(await call('demo-amd', MACHINE_NUMBER));
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
    machinesCaught: machines.length / machineTotal,
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
  hello: Object.fromEntries(
    ['demo-amd', 'demo-amd-waits'].map((agent) => {
      const mine = helloCalls.filter((c) => c.agent === agent);
      return [
        agent,
        {
          calls: mine.length,
          gapMs: stats(mine.map((c) => c.gapMs).filter(Number.isFinite)),
          agentTalkingAtHelloEnd: mine.filter((c) => c.gapMs < 0).length,
          unanswered: mine.filter((c) => !Number.isFinite(c.gapMs)).length,
          takenForMachine: mine.filter((c) => c.reason === 'voicemail_reached').length,
          each: mine.map((c) => `${c.voice} ${c.gapMs} ms ${c.reason}`),
        },
      ];
    }),
  ),
  machineCalls: {
    calls: machineCalls.length,
    messageLeft: machineCalls.filter(
      (r) => r.disconnection_reason === 'voicemail_reached' && r.transcript?.at(-1)?.content === VOICEMAIL.message,
    ).length,
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
    row('person answers "Hello?", begin message: its end → agent voice (ms)', summary.hello['demo-amd']!.gapMs),
    row(
      'person answers "Hello?", agent waits for the callee: its end → agent voice (ms)',
      summary.hello['demo-amd-waits']!.gapMs,
    ),
  ]),
  '',
  `Machines caught in the detection set: ${machines.length} of ${machineTotal} (${(summary.set.machinesCaught * 100).toFixed(1)}%). Simulated machines called: ${summary.machineCalls.messageLeft} of ${summary.machineCalls.calls} ended voicemail_reached with the message.`,
  `"Hello?" calls (${HELLO_VOICES.length} voices × ${calls}): begin message — ${summary.hello['demo-amd']!.agentTalkingAtHelloEnd} with the agent already talking at the hello's end, ${summary.hello['demo-amd']!.takenForMachine} taken for a machine, ${summary.hello['demo-amd']!.unanswered} unanswered; agent that waits — ${summary.hello['demo-amd-waits']!.takenForMachine} taken for a machine, ${summary.hello['demo-amd-waits']!.unanswered} unanswered.`,
  '',
  `${calls} people called with detection and ${calls} without, side by side in-process; ${summary.people.detecting.endedAsVoicemail} taken for a machine. Load average ${loadStart.map((x) => x.toFixed(2)).join(' ')} at the start, ${summary.loadAverage.end.map((x) => x.toFixed(2)).join(' ')} at the end.`,
].join('\n');
writeArtifacts('amd', summary, md);
console.log(md);
process.exit(0);
