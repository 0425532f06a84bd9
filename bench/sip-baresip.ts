// npm run bench:baresip [-- --rounds 3 --phrases 4]
// Voice to voice of a call from Debian's baresip over SIP next to a Twilio-protocol call, in one run, with the
// embedded engines (the recogniser, voice and demo model every agent gets by default). Each round places one call of
// each path, one after the other, against one in-process service listening on SIP_LISTEN at 127.0.0.1 with a trunk
// allowing 127.0.0.1:
// - baresip (a softphone nobody here wrote; test/e2e/sip-call.test.ts sets it up the same way) dials the agent's
//   number in PCMU and plays a WAV as its microphone: silence while the agent greets, then each phrase with 6 s of
//   silence after it for the answer; it hangs up when the WAV ends;
// - Twilio-protocol callers (harness.ts runCall) say the same phrases, one call per phrase, after the greeting.
// Both are timed by the service the same way: each answered turn's `turn` event, the caller's speech end (the VAD's)
// → the agent's first audio out (src/records/events.ts TurnLatency.e2e). The Twilio caller also times each turn at
// the phone (its last speech frame sent → the agent's first frame received), printed beside it. baresip writes what it
// heard only as it decodes packets, not on a clock, so it cannot time the gap itself.
// baresip comes from Debian (`apt-get install baresip`; npm test's set-up installs it). JSON and Markdown under
// artifacts/bench/.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { muLawDecode } from '../src/audio/g711.ts';
import { encodeWav } from '../src/audio/wav.ts';
import { writeBaresipHome } from '../test/helpers/baresip.ts';
import { freeUdpPort } from '../test/helpers/net.ts';
import { listCalls, loadPhrases, runCall, startTarget, targetApi, type TurnParts } from './harness.ts';
import { markdownTable, stats, writeArtifacts } from './report.ts';

const Args = z.object({
  rounds: z.coerce.number().int().min(1).max(20).default(3),
  /** Phrases per call. */
  phrases: z.coerce.number().int().min(1).max(8).default(4),
});
const { values } = parseArgs({
  options: { rounds: { type: 'string' }, phrases: { type: 'string' } },
});
const args = Args.parse(values);

const HOST = '127.0.0.1';
const SERVICE_RTP = { low: 53000, high: 53099 };
const PHONE_RTP = { low: 53100, high: 53199 };
/** Before the first phrase: the agent's greeting plays. */
const GREETING_MS = 5_000;
/** After each phrase: the recogniser reads it, the agent answers and its answer plays. */
const ANSWER_MS = 6_000;
const RATE = 8000 as const;

const which = spawn('sh', ['-c', 'command -v baresip'], { stdio: 'ignore' });
const [found] = (await once(which, 'exit')) as [number];
if (found !== 0) throw new Error('baresip is not installed: apt-get install baresip (npm test installs it)');

const dir = mkdtempSync(join(tmpdir(), 'bench-baresip-'));
const sipPort = await freeUdpPort();
const target = await startTarget({
  engines: 'embedded',
  env: { SIP_LISTEN: `udp:${HOST}:${sipPort}`, RTP_PORTS: `${SERVICE_RTP.low}-${SERVICE_RTP.high}` },
});
const api = targetApi(target);
await api('POST', '/v2/sip-trunks', {
  name: 'bench baresip',
  numbers: [target.number],
  inbound: { allowed_addresses: [`${HOST}/32`] },
});
const turns: TurnParts[] = [];
target.service!.events.on('turn', ({ callId, parts }) => turns.push({ callId, ...parts }));
const all = loadPhrases();
const phrasesOf = (round: number) =>
  Array.from({ length: args.phrases }, (_, i) => all[(round * args.phrases + i) % all.length]!);

/** The microphone: silence while the agent greets, then each phrase and the silence after it. Its length, ms. */
function microphone(path: string, phrases: Uint8Array[]): number {
  const samples = (ms: number) => Math.round((ms / 1000) * RATE);
  const length = samples(GREETING_MS) + phrases.reduce((n, p) => n + p.length + samples(ANSWER_MS), 0);
  const pcm = new Int16Array(length);
  let at = samples(GREETING_MS);
  for (const phrase of phrases) {
    pcm.set(muLawDecode(phrase), at);
    at += phrase.length + samples(ANSWER_MS);
  }
  writeFileSync(path, encodeWav({ samples: pcm, sampleRate: RATE }));
  return (length / RATE) * 1000;
}

/** One baresip call from `user`: it dials the agent's number, plays its WAV and hangs up at its end. */
async function baresipCall(user: string, phrases: Uint8Array[]): Promise<string> {
  const home = mkdtempSync(join(dir, 'phone-'));
  const wav = join(home, 'microphone.wav');
  const wavMs = microphone(wav, phrases);
  const port = await freeUdpPort();
  writeBaresipHome({
    home,
    host: HOST,
    port,
    microphone: wav,
    sampleRate: RATE,
    rtpPorts: `${PHONE_RTP.low}-${PHONE_RTP.high}`,
    codecs: ['PCMU'],
    user,
  });
  const child = spawn(
    'baresip',
    ['-f', home, '-e', `/dial sip:${target.number}@${HOST}:${sipPort}`, '-t', String(Math.ceil(wavMs / 1000) + 10)],
    { stdio: 'ignore' },
  );
  await once(child, 'exit');
  // The service finishes the record a moment after the BYE.
  for (let i = 0; i < 50; i++) {
    const mine = (await listCalls(target)).find((c) => c.call_from === user);
    if (mine) return mine.call_id;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no record of baresip's call from ${user}`);
}

const loadStart = loadavg();
// One call first, so the recogniser's model is loaded and the JIT warm before anything is timed.
const warm = await runCall(target, { phrases: phrasesOf(0).slice(0, 1), durationMs: 0, pauseMs: [400, 400], seed: 0 });
if (warm.error) throw new Error(`warm-up call failed: ${warm.error}`);
const sipCalls: string[] = [];
const twilioCalls: string[] = [];
const atThePhone: number[] = [];
for (let round = 0; round < args.rounds; round++) {
  const phrases = phrasesOf(round);
  sipCalls.push(await baresipCall(`+1555700${String(round).padStart(4, '0')}`, phrases));
  // A call per phrase (runCall takes one turn when its duration is that short): each phrase said once.
  for (const phrase of phrases) {
    const twilio = await runCall(target, { phrases: [phrase], durationMs: 1, pauseMs: [1_000, 1_000], seed: 0 });
    if (twilio.error) throw new Error(`Twilio-protocol call failed: ${twilio.error}`);
    twilioCalls.push(twilio.callId);
    atThePhone.push(...twilio.v2v);
  }
  console.error(`round ${round + 1} of ${args.rounds} done`);
}
const loadEnd = loadavg();
await target.close();
rmSync(dir, { recursive: true, force: true });

/** Each path's turns: voice to voice, and the parts of it the service timed (recogniser, model, voice). */
const row = (path: string, calls: string[]) => {
  const mine = turns.filter((t) => calls.includes(t.callId));
  const s = stats(mine.map((t) => t.e2e));
  const p50 = (part: 'asr' | 'llmSpeakable' | 'tts') =>
    stats(mine.flatMap((t) => (t[part] === null ? [] : [t[part]])))?.p50 ?? '';
  return {
    path,
    'turns timed': mine.length,
    p50: s?.p50 ?? '',
    p90: s?.p90 ?? '',
    max: s?.max ?? '',
    'recogniser final p50': p50('asr'),
    'model → first speakable chunk p50': p50('llmSpeakable'),
    'voice first audio p50': p50('tts'),
  };
};
const rows = [row('SIP (baresip)', sipCalls), row('Twilio protocol', twilioCalls)];
const summary = {
  when: new Date().toISOString(),
  args,
  loadAverage: { start: loadStart, end: loadEnd },
  serviceE2e: rows,
  twilioAtThePhone: stats(atThePhone),
};
const md = [
  `# bench:baresip — ${args.rounds} rounds × ${args.phrases} phrases per path, embedded engines`,
  '',
  "Voice to voice as the service timed each answered turn (the caller's speech end → the agent's first audio out), ms:",
  '',
  markdownTable(rows),
  '',
  `The Twilio-protocol caller's own timing (its last speech frame sent → the agent's first frame received): p50 ${summary.twilioAtThePhone?.p50} ms, p90 ${summary.twilioAtThePhone?.p90} ms over ${summary.twilioAtThePhone?.num} turns.`,
  '',
  `Load average ${loadStart.map((l) => l.toFixed(2)).join(' ')} at the start, ${loadEnd.map((l) => l.toFixed(2)).join(' ')} at the end.`,
].join('\n');
writeArtifacts('baresip', summary, md);
console.log(md);
process.exit(0);
