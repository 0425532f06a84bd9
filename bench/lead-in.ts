// The built-in voices' silent lead-in (audio/lead-in.ts): how much audio comes before each voice's
// first word on the phone path (8 kHz), as the voice makes it, after the per-sample cut the service
// made until November 27 (first sample above −50 dBFS, less 10 ms) and after the call's cut now
// (LeadInTrimmer in 20 ms chunks, the voice's level carried from one sentence to the next as a call
// does). Where the voice starts is read offline on the whole sentence: its first 5 ms window within
// 35 dB of that sentence's own loudest window (the cut's rule, with the level known in advance).
// A negative lead-in is the start of a first phoneme cut off, or noise that this reference took for
// voice (flite kal's and awb's noise floor reaches −50 dBFS).
// Per voice: median and max over 12 agent sentences, the first 20 ms frame's level, and the share whose first 40 ms
// carry the voice (carriesVoice at the level the cut used). Run: npm run bench:lead-in
import { loadavg } from 'node:os';
import { carriesVoice, LEAD_IN, LeadInTrimmer, voiceOnset } from '../src/audio/lead-in.ts';
import { concatPcm } from '../src/audio/pcm.ts';
import { EspeakTtsEngine } from '../src/speech/tts/espeak.ts';
import { FliteTtsEngine } from '../src/speech/tts/flite.ts';
import type { TtsEngine } from '../src/speech/types.ts';

const RATE = 8000;
const WINDOW = (RATE * LEAD_IN.windowMs) / 1000;
const FRAME = RATE / 50;
const REFERENCE_DB = 35;
const SENTENCES = [
  'Thank you for calling, how can I help you today?',
  'Sure.',
  'Hi there! What is your order number?',
  'Of course, let me check that for you.',
  'Your appointment is booked for Tuesday at nine.',
  'Yes.',
  'Could you spell your last name for me, please?',
  'Great, that is all set.',
  'Four five six, got it.',
  'Hmm, I do not see that order.',
  'Anything else I can help with?',
  'Goodbye, and have a nice day.',
];

const ms = (samples: number) => (samples * 1000) / RATE;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

function loudestWindow(samples: Int16Array): number {
  let loudest = 0;
  for (let at = 0; at + WINDOW <= samples.length; at += WINDOW) {
    let sum = 0;
    for (let i = at; i < at + WINDOW; i++) sum += samples[i]! * samples[i]!;
    loudest = Math.max(loudest, Math.sqrt(sum / WINDOW));
  }
  return loudest;
}

async function render(engine: TtsEngine, text: string, voiceId: string | undefined): Promise<Int16Array> {
  const chunks: Int16Array[] = [];
  for await (const chunk of engine.synthesize(text, { sampleRate: RATE, ...(voiceId ? { voiceId } : {}) }))
    chunks.push(chunk.samples);
  return concatPcm(chunks);
}

async function measure(label: string, engine: TtsEngine, voiceId?: string): Promise<Record<string, string>> {
  const raw: number[] = [];
  const perSample: number[] = [];
  const now: number[] = [];
  let voicedIn40 = 0;
  const firstFrameDb: number[] = [];
  let level: number | undefined;
  for (const text of SENTENCES) {
    const audio = await render(engine, text, voiceId);
    const onset = voiceOnset(audio, WINDOW, Math.max(LEAD_IN.floor, loudestWindow(audio) * 10 ** (-REFERENCE_DB / 20)));
    if (onset === -1) continue;
    raw.push(ms(onset));
    const loudSample = audio.findIndex((s) => Math.abs(s) > 100);
    perSample.push(ms(onset - Math.max(0, loudSample - RATE / 100)));
    // As a call cuts it: 20 ms chunks, each reply's first synthesis, the level heard before.
    const trimmer = new LeadInTrimmer(RATE, { first: true, level });
    const out: Int16Array[] = [];
    for (let at = 0; at < audio.length; at += FRAME) out.push(trimmer.push(audio.subarray(at, at + FRAME)));
    out.push(trimmer.end());
    now.push(ms(onset - trimmer.cut));
    const heard = concatPcm(out);
    if (carriesVoice(heard.subarray(0, 2 * FRAME), RATE, level)) voicedIn40++;
    let sum = 0;
    for (const s of heard.subarray(0, FRAME)) sum += s * s;
    firstFrameDb.push(20 * Math.log10(Math.max(1, Math.sqrt(sum / FRAME)) / 32768));
    level = trimmer.voiceLevel;
  }
  const cell = (values: number[]) => `${median(values).toFixed(0)} / ${Math.max(...values).toFixed(0)}`;
  return {
    voice: label,
    'lead-in as made ms (median / max)': cell(raw),
    'per-sample cut (before) ms': cell(perSample),
    'energy cut (now) ms': cell(now),
    'now, least ms (<0: clipped)': Math.min(...now).toFixed(1),
    'first 20 ms frame dBFS (now, median)': median(firstFrameDb).toFixed(0),
    'voice in first 40 ms (now)': `${voicedIn40}/${now.length}`,
  };
}

const load = loadavg()
  .map((l) => l.toFixed(2))
  .join(', ');
const rows: Array<Record<string, string>> = [];
const flite = new FliteTtsEngine();
for (const voice of ['slt', 'rms', 'awb', 'kal', 'kal16']) rows.push(await measure(`flite ${voice}`, flite, voice));
await flite.close();
const espeak = new EspeakTtsEngine();
rows.push(await measure('espeak-ng en-us', espeak));
await espeak.close();
console.table(rows);
console.log(`load average before: ${load}`);
