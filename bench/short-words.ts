// npm run bench:short-words
// Speech over the agent shorter than the interruption threshold, on the phone path (8 kHz, μ-law both ways), read
// as the service reads it: Silero's segments, each read by Moonshine from the 300 ms before its start to the VAD's
// pause (as caller-input.ts hands it over), and sorted as the caller side sorts it: no words, acknowledgements only
// (the default backchannel list), or other words. Speech stops the agent once it lasts the threshold (600 ms at the
// default interruption_sensitivity) from its start; the VAD hears a pause 200 ms after the voice ends, so a segment
// under 400 ms is "short": its pause comes first. Before short speech was read, it never stopped the agent; now it
// does when read as other words. Speech past the threshold stops it unless read as acknowledgements, either way.
// Sets: words that mean it ("stop", "wait", "no") and acknowledgements ("uh-huh", "okay") in four flite voices, as
// said and said quickly; the recorded human telephone prompts of one or two words (asterisk, a TEST SET ONLY); and
// noise alone (music on hold, babble, a fan) as loud as the flite words, and 5 and 15 dB under them: its speech
// starts are what a short-word rule could let through.
// Writes artifacts/bench/short-words.{json,md}.
import { availableParallelism, loadavg } from 'node:os';
import { AGENT_DEFAULTS } from '../src/agents/schema.ts';
import { muLawDecode, muLawEncode } from '../src/audio/g711.ts';
import { concatPcm } from '../src/audio/pcm.ts';
import { readWavFile } from '../src/audio/wav.ts';
import { isBackchannel } from '../src/call/caller/backchannel.ts';
import { CALLER_DEFAULTS, interruptionThresholdMs, spoken } from '../src/call/caller/caller-input.ts';
import { MoonshineEngine } from '../src/speech/stt/moonshine/engine.ts';
import type { SttStream } from '../src/speech/types.ts';
import { VAD_DEFAULTS } from '../src/speech/vad/defaults.ts';
import { SileroVadEngine } from '../src/speech/vad/silero.ts';
import { segmentsOf } from '../test/speech/vad/measure.ts';
import { asteriskPrompts } from '../test/support/test-sets.ts';
import { activeRms, phoneNoises, scaled } from './noise-sources.ts';
import { fliteSaid } from './flite-said.ts';
import { markdownTable, writeArtifacts } from './report.ts';

const RATE = 8000;
const FRAME = RATE / 50;
const loadStart = loadavg();
const THRESHOLD_MS = interruptionThresholdMs(AGENT_DEFAULTS.interruptionSensitivity);
/** A segment this short has its pause heard before the threshold. */
const SHORT_MS = THRESHOLD_MS - VAD_DEFAULTS.minSilenceMs;

const MEANT = ['stop', 'wait', 'no', 'what', 'hey', 'sorry', 'hold on', 'excuse me', 'hang on', 'hello'];
const ACKNOWLEDGEMENTS = ['uh-huh', 'mm-hmm', 'okay', 'yeah', 'right', 'yes', 'sure', 'i see', 'got it', 'alright'];
const VOICES = ['kal', 'awb', 'rms', 'slt'];
const QUICK = 0.7;

type Kind = 'none' | 'acknowledgement' | 'words';
interface Heard {
  speechMs: number;
  reading: string;
  kind: Kind;
}

/** As caller-input.ts sorts a short reading over the agent. */
const kindOf = (text: string): Kind =>
  spoken(text) === '' ? 'none' : isBackchannel(text) ? 'acknowledgement' : 'words';
const isShort = (h: Heard) => h.speechMs < SHORT_MS;
/** Whether the speech stopped the agent before short speech was read, and now. */
const stoppedBefore = (h: Heard) => !isShort(h) && h.kind !== 'acknowledgement';
const stopsNow = (h: Heard) => stoppedBefore(h) || (isShort(h) && h.kind === 'words');

const vad = new SileroVadEngine();
const moonshine = new MoonshineEngine();
const stream: SttStream = await moonshine.open({ sampleRate: RATE, language: 'en-US' });

/** Each stretch of speech the VAD hears in `line`, and its reading. */
async function hear(line: Int16Array): Promise<Heard[]> {
  const segments = await segmentsOf(await vad.open({ sampleRate: RATE }), line, RATE);
  const heard: Heard[] = [];
  for (const [start, end] of segments) {
    const from = Math.max(0, Math.round((start - CALLER_DEFAULTS.prerollMs / 1000) * RATE));
    const to = Math.min(line.length, Math.round((end + VAD_DEFAULTS.minSilenceMs / 1000) * RATE));
    for (let i = from; i < to; i += FRAME) stream.push(line.subarray(i, Math.min(to, i + FRAME)));
    const reading = (await stream.finalize()).text.trim();
    heard.push({ speechMs: Math.round((end - start) * 1000), reading, kind: kindOf(reading) });
  }
  return heard;
}

const phoneLine = (samples: Int16Array) => muLawDecode(muLawEncode(samples));
const padded = (samples: Int16Array) => concatPcm([new Int16Array(RATE / 2), samples, new Int16Array(RATE / 2)]);

interface Said {
  set: string;
  text: string;
  heard: Heard[];
}
const said: Said[] = [];
const fliteLevels: Int16Array[] = [];
for (const [set, words] of [
  ['flite: words that mean it', MEANT],
  ['flite: acknowledgements', ACKNOWLEDGEMENTS],
] as const)
  for (const stretch of [1, QUICK])
    for (const voice of VOICES)
      for (const text of words) {
        const samples = fliteSaid(text, voice, RATE, stretch);
        fliteLevels.push(samples);
        said.push({
          set: `${set}${stretch === 1 ? '' : ', said quickly'}`,
          text: `${voice}: ${text}`,
          heard: await hear(phoneLine(padded(samples))),
        });
      }

// Human: the recorded telephone prompts of a word or two (no beeps, no spelled symbols).
const prompts = asteriskPrompts()
  .filter((p) => /^[A-Za-z' .!?-]+$/.test(p.text) && p.text.trim().split(/\s+/).length <= 2)
  .sort((a, b) => a.id.localeCompare(b.id));
for (const p of prompts) {
  const { samples } = await readWavFile(p.file, RATE);
  said.push({ set: 'human prompts of one or two words', text: p.text, heard: await hear(phoneLine(padded(samples))) });
}

const pct = (n: number, of: number) => (of === 0 ? '–' : `${((n / of) * 100).toFixed(0)}% (${n})`);
const rows: Record<string, string | number>[] = [];
for (const set of [...new Set(said.map((s) => s.set))]) {
  const clips = said.filter((s) => s.set === set);
  const any = (f: (h: Heard) => boolean) => clips.filter((c) => c.heard.some(f)).length;
  const allShort = clips.filter((c) => c.heard.length > 0 && c.heard.every(isShort)).length;
  const speechMs = clips.flatMap((c) => c.heard.map((h) => h.speechMs)).sort((a, b) => a - b);
  rows.push({
    set,
    said: clips.length,
    'VAD heard nothing': clips.filter((c) => c.heard.length === 0).length,
    'speech p50 (ms)': speechMs[Math.floor(speechMs.length / 2)] ?? '–',
    [`all under ${SHORT_MS} ms`]: pct(allShort, clips.length),
    'stopped the agent before': pct(any(stoppedBefore), clips.length),
    'stops it now': pct(any(stopsNow), clips.length),
  });
}

// Noise alone: what a short-word rule could let through.
const typical = activeRms(concatPcm(fliteLevels));
const noiseRows: Record<string, string | number>[] = [];
const noiseReadings: Record<string, string[]> = {};
for (const noise of await phoneNoises())
  for (const under of [0, 5, 15]) {
    const line = phoneLine(scaled(noise.samples.subarray(0, 60 * RATE), typical / noise.rms / 10 ** (under / 20)));
    const minutes = line.length / RATE / 60;
    const heard = await hear(line);
    const perMinute = (f: (h: Heard) => boolean) => (heard.filter(f).length / minutes).toFixed(1);
    const name = `${noise.name}, ${under} dB under speech (${(minutes * 60).toFixed(0)} s)`;
    noiseReadings[name] = heard.filter((h) => isShort(h) && h.kind === 'words').map((h) => h.reading);
    noiseRows.push({
      noise: name,
      'speech starts/min': perMinute(() => true),
      'short/min': perMinute(isShort),
      'short, read as words/min': perMinute((h) => isShort(h) && h.kind === 'words'),
      'stopped the agent/min before': perMinute(stoppedBefore),
      'stops it/min now': perMinute(stopsNow),
    });
  }
await stream.close();
await moonshine.close();
await vad.close();

const misread = said
  .filter((s) => s.set.startsWith('flite: acknowledgements') && s.heard.some((h) => h.kind === 'words'))
  .map((s) => `${s.text} → ${s.heard.map((h) => `"${h.reading}" ${h.speechMs} ms`).join(', ')}`);
const lost = said
  .filter((s) => !s.set.startsWith('flite: acknowledgements') && !s.heard.some(stopsNow))
  .map((s) => `${s.text} → ${s.heard.map((h) => `"${h.reading}" ${h.speechMs} ms`).join(', ') || 'nothing heard'}`);
const md = [
  `# bench:short-words — speech over the agent shorter than the ${THRESHOLD_MS} ms threshold`,
  '',
  markdownTable(rows),
  '',
  markdownTable(noiseRows),
  '',
  `Acknowledgements read as other words: ${misread.length ? misread.join('; ') : 'none'}.`,
  '',
  `Words that mean it, still not stopping the agent: ${lost.length ? lost.join('; ') : 'none'}.`,
  '',
  `Noise read as words while short: ${JSON.stringify(noiseReadings)}`,
  '',
  `load average ${loadStart.map((x) => x.toFixed(2)).join(' ')} at the start, ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')} at the end, ${availableParallelism()} cores`,
].join('\n');
writeArtifacts('short-words', { when: new Date().toISOString(), thresholdMs: THRESHOLD_MS, rows, noiseRows, said }, md);
console.log(md);
process.exit(0);
