// npm run bench:browser
// Voice-to-voice as a person at the served page hears it: Debian's Chromium (headless, fake
// microphone playing a WAV of three caller phrases with long silences) makes a call from the page
// to the in-process service (embedded engines, demo agent). The page's two AudioWorklets are
// tapped, not changed: the capture side's 20 ms frames with their level give the last speech frame
// of each turn, the playback side's echo of an utterance's start mark gives the moment its first
// sample is played. Per turn: that moment − the end of the last speech frame before it; beside it
// the record's latency.e2e for the same call. (The sound card's own output latency, which the
// browser reports as AudioContext.outputLatency, is printed, not added.) `--codec pcm` keeps the
// page on PCM (default: what the page picks, Opus in Chromium); the socket's audio bytes each way
// are counted from the browser's own WebSocket frames.
// Writes JSON and Markdown under artifacts/bench/.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeWav } from '../src/audio/wav.ts';
import { CallRecordSchema } from '../src/records/record.ts';
import { launchChromium, writeWav } from '../test/helpers/browser.ts';
import { startTarget } from './harness.ts';
import { markdownTable, stats, writeArtifacts } from './report.ts';

const RATE = 16000;
const codecArg = process.argv.indexOf('--codec');
const forcePcm = codecArg > 0 && process.argv[codecArg + 1] === 'pcm';
const PHRASES = ['01-my-name-is-john', '14-next-monday-morning', '04-yes-please'];
/** Silence before the first phrase (the greeting plays) and after each (the answer plays). */
const GAP_S = 9;

const fixtures = join(import.meta.dirname, '..', 'media', 'fixtures');
const phrase = (prefix: string) =>
  decodeWav(
    readFileSync(
      join(
        fixtures,
        readdirSync(fixtures).find((f) => f.startsWith(prefix) && f.endsWith('.16k.wav'))!,
      ),
    ),
    RATE,
  ).samples;

const work = mkdtempSync(join(tmpdir(), 'voicecall-browser-v2v-'));
const parts = PHRASES.map(phrase);
const mic = new Int16Array(RATE * GAP_S * (parts.length + 2) + parts.reduce((n, p) => n + p.length, 0));
let at = RATE * GAP_S;
for (const p of parts) {
  mic.set(p, at);
  at += p.length + RATE * GAP_S;
}
writeWav(join(work, 'mic.wav'), mic, RATE);

const loadStart = loadavg();
const target = await startTarget({ engines: 'embedded', beginMessage: 'Hello, thanks for calling. How can I help?' });
const browser = await launchChromium(join(work, 'mic.wav'));
const page = await browser.context.newPage();
// Taps on the page's worklets, installed before its script runs.
// (A string: this project compiles without the DOM's types.)
await page.addInitScript({
  content: `
    const Original = window.AudioWorkletNode;
    window.__v2v = { frames: [], starts: [], outputLatency: null };
    window.AudioWorkletNode = class extends Original {
      constructor(ctx, name, options) {
        super(ctx, name, options);
        window.__v2v.outputLatency = ctx.outputLatency ?? null;
        if (name === 'capture') this.port.addEventListener('message', (e) => { if (e.data?.type === 'frame') window.__v2v.frames.push([performance.now(), e.data.level]); });
        if (name === 'playback') this.port.addEventListener('message', (e) => { if (e.data?.type === 'mark' && e.data.name.endsWith(':start')) window.__v2v.starts.push(performance.now()); });
      }
    };`,
});
const audioBytes = { sent: 0, received: 0 };
page.on('websocket', (socket) => {
  socket.on('framesent', ({ payload }) => {
    if (typeof payload !== 'string') audioBytes.sent += payload.length;
  });
  socket.on('framereceived', ({ payload }) => {
    if (typeof payload !== 'string') audioBytes.received += payload.length;
  });
});
await page.goto(`${target.url}/${forcePcm ? '?codec=pcm' : ''}`);
await page.fill('#api-key', target.key);
await page.click('#use-key');
await page.waitForSelector(`#agent option[value="${target.agentId}"]`, { state: 'attached' });
await page.selectOption('#agent', target.agentId);
await page.click('#call');
await page.waitForSelector('body[data-call-state="live"]', { timeout: 15_000 });
const codec = await page.getAttribute('body', 'data-codec');
const liveAt = performance.now();
// The greeting, then each phrase and its answer.
await page.waitForTimeout((GAP_S * (parts.length + 1) + parts.reduce((n, p) => n + p.length / RATE, 0)) * 1000);
const tapped = (await page.evaluate('window.__v2v')) as {
  frames: [number, number][];
  starts: number[];
  outputLatency: number | null;
};
const callId = (await page.textContent('#call-id'))!.trim();
const liveSeconds = (performance.now() - liveAt) / 1000;
await page.click('#hangup');
await page.waitForSelector('#ended', { timeout: 10_000 });
let e2e: unknown = null;
for (let i = 0; i < 100; i++) {
  const res = await fetch(`${target.url}/v2/calls/${callId}`, { headers: { authorization: `Bearer ${target.key}` } });
  const record = CallRecordSchema.parse(await res.json());
  if (record.call_status === 'ended') {
    e2e = record.latency?.e2e ?? null;
    break;
  }
  await new Promise((r) => setTimeout(r, 100));
}
await browser.close();
await target.close();
rmSync(work, { recursive: true, force: true });

// Speech: frames louder than a tenth of the loudest. Each agent start after speech answers it.
const loudest = Math.max(...tapped.frames.map(([, level]) => level));
const speech = tapped.frames.filter(([, level]) => level > loudest / 10).map(([t]) => t);
const v2v: number[] = [];
let previousStart = 0;
for (const start of tapped.starts) {
  const last = speech.filter((t) => t < start && t > previousStart).at(-1);
  if (last !== undefined) v2v.push(start - last);
  previousStart = start;
}
const s = stats(v2v);
const md = [
  '# bench:browser — voice-to-voice at the page, Chromium with a fake microphone',
  '',
  markdownTable([
    {
      measure: "fake microphone's last speech frame → first agent sample played (ms)",
      p50: s?.p50 ?? 'n/a',
      max: s?.max ?? 'n/a',
      turns: s?.num ?? 0,
    },
  ]),
  '',
  `codec ${codec}; socket audio bytes a second of call: page → service ${Math.round(audioBytes.sent / liveSeconds)}, service → page ${Math.round(audioBytes.received / liveSeconds)} (the page sends all the time; the service only while the agent speaks)`,
  '',
  `the record's latency.e2e for the same call: ${JSON.stringify(e2e)}; AudioContext.outputLatency ${tapped.outputLatency === null ? 'n/a' : `${Math.round(tapped.outputLatency * 1000)} ms`} (not included)`,
  '',
  `load average ${loadStart.map((x) => x.toFixed(2)).join(' ')} at the start, ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')} at the end`,
].join('\n');
writeArtifacts(
  'browser-v2v',
  { when: new Date().toISOString(), codec, v2v, e2e, outputLatency: tapped.outputLatency, audioBytes, liveSeconds },
  md,
);
console.log(md);
process.exit(0);
