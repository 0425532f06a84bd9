// npm run bench:turns [-- --calls 4 --modes silence,semantic --stt embedded,pocketsphinx,deepgram,assemblyai
//   --hints "um,uh" --stt-model base --log --set held-out|numbers --unfinished alone|whole]
// Turn-taking on the phone path: 60 caller turns spoken by flite voices — 36 finished (questions,
// statements, short answers, times) and 24 unfinished, each with a pause of 0.6-1.5 s inside
// (digits being read out, a trailing "and", "um", an open list) — played over Twilio Media
// Streams into the service with the embedded engines and an instant model, once per end-of-turn
// mode. For each mode: premature cut-offs (the agent's voice arrived before the caller's last
// word was sent) and the response gap after finished turns (the caller's last speech frame sent →
// the agent's first frame received: the silence the caller hears, engines included), and the same gap at
// every turn's end (an unfinished turn the agent waited through included, at its real end); where the agent cut
// in, how long its voice still came once the caller went on (talk-over).
//
// With --stt, the same turns per recogniser: "embedded" (the agent's default, Moonshine),
// "pocketsphinx", and the streaming providers through their stand-ins (test/speech/stt/*/
// stand-in.ts, started here on 127.0.0.1, no added delay; they read the audio with pocketsphinx)
// — "deepgram" (speech_final after the engine's endpointing, UtteranceEnd after utterance_end_ms),
// "assemblyai" (its turn model confident at every pause: end_of_turn after
// min_end_of_turn_silence_when_confident) and "assemblyai-unsure" (never confident: end_of_turn
// after max_turn_silence). The provider's signal is one input to the end-of-turn policy; the
// service logs at each turn's end whether it decided (`end of turn`, recogniser_decided), and the
// bench counts, per turn, whether the end that brought the agent's answer was one it decided.
// Writes JSON (with what the agent heard in each call) and Markdown under artifacts/bench/.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { z } from 'zod';
import { startService } from '../src/app.ts';
import { muLawEncode } from '../src/audio/g711.ts';
import { concatPcm, FRAME_MS } from '../src/audio/pcm.ts';
import { TwilioStreamCaller } from '../src/carriers/sim/twilio-stream.ts';
import { readWavFile } from '../src/audio/wav.ts';
import { loadConfig } from '../src/config.ts';
import { FliteTtsEngine } from '../src/speech/tts/flite.ts';
import { placeInboundCall } from '../test/helpers/phone.ts';
import { TEST_TWILIO_TOKEN } from '../test/helpers/service.ts';
import { startAssemblyAiStandIn } from '../test/speech/stt/assemblyai/stand-in.ts';
import { startDeepgramStandIn } from '../test/speech/stt/deepgram/stand-in.ts';
import { StandInEar } from '../test/speech/stt/stand-in-ear.ts';
import { loudBounds } from './harness.ts';
import { markdownTable, stats, writeArtifacts } from './report.ts';
import { gameVoices } from './sets/game-voices.ts';
import {
  HELD_OUT_DIGITS,
  HELD_OUT_FINISHED,
  HELD_OUT_PAUSES_MS,
  HELD_OUT_UNFINISHED,
  NUMBERS_FINISHED,
  NUMBERS_UNFINISHED,
  oneSentence,
  speechPauses,
} from './sets/held-out-turns.ts';
import { spawnInstantModel } from './stub-engines.ts';

const RECOGNISERS = ['embedded', 'pocketsphinx', 'deepgram', 'assemblyai', 'assemblyai-unsure'] as const;
type Recogniser = (typeof RECOGNISERS)[number];
/**
 * The AssemblyAI stand-in's fixed turn-model confidence: above the documented default
 * end_of_turn_confidence_threshold (0.4) and the policy's own bar (0.5), or under both.
 */
const ASSEMBLYAI_CONFIDENCE = { assemblyai: 0.8, 'assemblyai-unsure': 0.2 } as const;

const Args = z.object({
  calls: z.coerce.number().int().min(1).max(12).default(4),
  modes: z
    .string()
    .default('silence,semantic')
    .transform((s) => s.split(',').map((m) => z.enum(['silence', 'semantic']).parse(m.trim()))),
  /** The recognisers to hear the turns with, comma-separated (each with every mode). */
  stt: z
    .string()
    .default('embedded')
    .transform((s) => s.split(',').map((r) => z.enum(RECOGNISERS).parse(r.trim()))),
  /** Phrase hints for the agents' recogniser (stt.phrases), comma-separated. */
  hints: z
    .string()
    .default('')
    .transform((s) =>
      s
        .split(',')
        .map((h) => h.trim())
        .filter(Boolean),
    ),
  /** The recogniser's model (stt.model); the agent's default otherwise. */
  'stt-model': z.enum(['tiny', 'base']).optional(),
  /**
   * Writes the service's debug log (each end-of-turn decision with the words it saw) to
   * artifacts/bench/turns-log.jsonl.
   */
  log: z.boolean().default(false),
  /**
   * How each spoken part ends: "whole" sends flite's audio as made, its soft word ends included;
   * "chop" cuts every sample quieter than 400 at both ends, as this bench did until November 26
   * (it cut 90-260 ms off the end of a phrase: the fading "m" of "um", the "z" of "because").
   * Either way the caller's speech is taken to end at the last sample louder than 400, and the
   * pause inside an unfinished turn is measured between such samples.
   */
  ends: z.enum(['whole', 'chop']).default('whole'),
  /**
   * The turns: "turns", the 60 the end of turn was built on; "held-out", the turns of bench/sets/held-out-turns.ts no
   * rule was tuned on — flite's phrases and turns cut from the game voices' human lines; "numbers", that file's
   * second set of numbers.
   */
  set: z.enum(['turns', 'held-out', 'numbers']).default('turns'),
  /**
   * How flite says an unfinished turn of the held-out and numbers sets: "alone", each part as a sentence of its own
   * (the first then ends with a finished sentence's fall: "I need her." … "to call me back."); "whole", the turn said
   * as one sentence and cut where its first part ends (flite's own phone timings, splitAtWord), so the voice before
   * the pause is the voice inside a sentence, as a caller who stops to think keeps it.
   */
  unfinished: z.enum(['alone', 'whole']).default('alone'),
});
const { values } = parseArgs({
  options: {
    calls: { type: 'string' },
    modes: { type: 'string' },
    stt: { type: 'string' },
    hints: { type: 'string' },
    'stt-model': { type: 'string' },
    log: { type: 'boolean' },
    ends: { type: 'string' },
    set: { type: 'string' },
    unfinished: { type: 'string' },
  },
});
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

/** One spoken part: its audio, and where its speech is (samples louder than LOUD_SAMPLE). */
interface Part {
  mulaw: Uint8Array;
  /** Quiet before the first loud sample and after the last, ms. */
  leadMs: number;
  tailMs: number;
}

interface Turn {
  kind: 'finished' | 'unfinished';
  /** What the figures are reported by: "flite finished", "human unfinished", … */
  category: string;
  parts: Part[];
  /** Between the last loud sample of the first part and the first of the second. */
  pauseMs: number;
  text: string;
}

/** Where speech starts and ends for this bench's timings. */
const LOUD_SAMPLE = 400;
const RATE = 8000;
const FRAME_SAMPLES = RATE / 50;

/** flite at 8 kHz, as a part of a turn. */
async function speak(tts: FliteTtsEngine, text: string, voice: string): Promise<Part> {
  const chunks: Int16Array[] = [];
  for await (const chunk of tts.synthesize(text, { sampleRate: RATE, voiceId: voice })) chunks.push(chunk.samples);
  return partOf(concatPcm(chunks));
}

/** 8 kHz speech as a part of a turn, its ends kept whole or chopped at LOUD_SAMPLE (--ends). */
function partOf(all: Int16Array): Part {
  const { from, to } = loudBounds(all, LOUD_SAMPLE);
  if (args.ends === 'chop') return { mulaw: muLawEncode(all.slice(from, to)), leadMs: 0, tailMs: 0 };
  const lead = from;
  const tail = all.length - to;
  // Whole frames only, so the last loud sample's frame is known: the tail's quiet is padded to a frame.
  const padded = new Int16Array(Math.ceil(all.length / FRAME_SAMPLES) * FRAME_SAMPLES);
  padded.set(all);
  return {
    mulaw: muLawEncode(padded),
    leadMs: (lead / RATE) * 1000,
    tailMs: ((tail + padded.length - all.length) / RATE) * 1000,
  };
}

async function buildTurns(): Promise<Turn[]> {
  const tts = new FliteTtsEngine();
  const turns: Turn[] = [];
  for (const [i, text] of FINISHED.entries()) {
    for (const k of [0, 1])
      turns.push({
        kind: 'finished',
        category: 'finished',
        parts: [await speak(tts, text, VOICES[(i + k * 2) % VOICES.length]!)],
        pauseMs: 0,
        text,
      });
  }
  for (const [i, [a, b]] of UNFINISHED.entries()) {
    for (const k of [0, 1]) {
      const voice = VOICES[(i + k) % VOICES.length]!;
      turns.push({
        kind: 'unfinished',
        category: 'unfinished',
        parts: [await speak(tts, a, voice), await speak(tts, b, voice)],
        pauseMs: PAUSES[(i * 2 + k) % PAUSES.length]!,
        text: `${a} … ${b}`,
      });
    }
  }
  await tts.close();
  return interleaved(turns);
}

/** Interleaved so every call gets every kind. */
const interleaved = (turns: Turn[]): Turn[] =>
  turns
    .map((t, i) => ({ t, key: (i * 7919) % turns.length }))
    .sort((a, b) => a.key - b.key)
    .map((x) => x.t);

/** flite says each finished phrase, the voices in turn from `voice`. */
async function fliteFinished(tts: FliteTtsEngine, texts: string[], category: string, voice: number): Promise<Turn[]> {
  const turns: Turn[] = [];
  for (const [i, text] of texts.entries())
    turns.push({
      kind: 'finished',
      category,
      parts: [await speak(tts, text, VOICES[(i + voice) % VOICES.length]!)],
      pauseMs: 0,
      text,
    });
  return turns;
}

/** flite says each unfinished turn in one voice (in turn from `voice`), its pause one of HELD_OUT_PAUSES_MS in turn. */
async function fliteUnfinished(
  tts: FliteTtsEngine,
  pairs: [string, string][],
  category: string,
  voice: number,
): Promise<Turn[]> {
  const turns: Turn[] = [];
  for (const [i, [a, b]] of pairs.entries()) {
    const v = VOICES[(i + voice) % VOICES.length]!;
    turns.push({
      kind: 'unfinished',
      category,
      parts:
        args.unfinished === 'whole'
          ? await splitAtWord(tts, a, b, v)
          : [await speak(tts, a, v), await speak(tts, b, v)],
      pauseMs: HELD_OUT_PAUSES_MS[i % HELD_OUT_PAUSES_MS.length]!,
      text: `${a} … ${b}`,
    });
  }
  return turns;
}

/**
 * flite's phones and the time each ends, seconds: its CLI's -psdur, with the duration stretch the addon sets at normal
 * speed (1; kal's own default is longer), so the times are those of the addon's audio.
 */
function phoneEnds(text: string, voice: string): { phone: string; end: number }[] {
  const out = execFileSync('flite', ['-voice', voice, '--setf', 'duration_stretch=1', '-psdur', '-t', text, 'none'], {
    encoding: 'utf8',
  });
  return out
    .trim()
    .split(/\s+/)
    .map((item) => {
      const at = item.lastIndexOf(':');
      return { phone: item.slice(0, at), end: Number(item.slice(at + 1)) };
    })
    .filter((p) => p.phone !== 'pau');
}

/**
 * `a b` said by flite as one sentence, cut where `a` ends: after as many phones as `a` alone has, when the sentence
 * begins with exactly those phones (it does unless a word's sound changes at the join; then this throws).
 */
async function splitAtWord(tts: FliteTtsEngine, a: string, b: string, voice: string): Promise<[Part, Part]> {
  const whole = `${a} ${b}`;
  const first = phoneEnds(a, voice);
  const all = phoneEnds(whole, voice);
  const same = first.every((p, i) => all[i]?.phone === p.phone);
  if (!same || all.length <= first.length) throw new Error(`flite's phones for "${a}" do not begin "${whole}"`);
  const chunks: Int16Array[] = [];
  for await (const chunk of tts.synthesize(whole, { sampleRate: RATE, voiceId: voice })) chunks.push(chunk.samples);
  const samples = concatPcm(chunks);
  const cut = Math.round(all[first.length - 1]!.end * RATE);
  return [partOf(samples.slice(0, cut)), partOf(samples.slice(cut))];
}

/** The second held-out set of numbers: finished answers and numbers broken off by a pause, flite's voices in turn. */
async function buildNumbers(): Promise<Turn[]> {
  const tts = new FliteTtsEngine();
  const turns = [
    ...(await fliteFinished(tts, NUMBERS_FINISHED, 'numbers finished', 0)),
    ...(await fliteUnfinished(tts, NUMBERS_UNFINISHED, 'numbers unfinished', 1)),
  ];
  await tts.close();
  return interleaved(turns);
}

/** Human turns of the held-out set: one-sentence game lines of at most this long. */
const HUMAN_MAX_S = 5;
/** Of each: whole lines (no pause inside of HUMAN_PAUSE_MS) and lines split at their one pause inside. */
const HUMAN_TURNS = 16;
/** A pause inside a human line this long is where it is split (shorter ones stay: a breath between words). */
const HUMAN_PAUSE_MS = 200;

/**
 * The held-out set: flite's four voices say the finished phrases, the answers ending in digits and the unfinished
 * turns (one voice per phrase, in turn); the game's actors give whole lines (finished) and lines split at the one
 * pause inside them, the pause lengthened to HELD_OUT_PAUSES_MS (unfinished).
 */
async function buildHeldOut(): Promise<Turn[]> {
  const tts = new FliteTtsEngine();
  const turns = [
    ...(await fliteFinished(tts, HELD_OUT_FINISHED, 'flite finished', 0)),
    ...(await fliteFinished(tts, HELD_OUT_DIGITS, 'flite digits', 1)),
    ...(await fliteUnfinished(tts, HELD_OUT_UNFINISHED, 'flite unfinished', 2)),
  ];
  await tts.close();
  const lines = [];
  for (const line of await gameVoices()) {
    if (!oneSentence(line.text) || line.seconds > HUMAN_MAX_S) continue;
    const wav = await readWavFile(line.path, RATE);
    const speech = speechPauses(wav.samples, RATE, HUMAN_PAUSE_MS);
    if (speech) lines.push({ line, samples: wav.samples, speech });
  }
  // Spread over the actors: every k-th line of each kind, by id.
  const pick = <T>(xs: T[]): T[] =>
    xs.filter((_, i) => i % Math.max(1, Math.floor(xs.length / HUMAN_TURNS)) === 0).slice(0, HUMAN_TURNS);
  for (const { line, samples } of pick(lines.filter((l) => l.speech.pauses.length === 0)))
    turns.push({ kind: 'finished', category: 'human finished', parts: [partOf(samples)], pauseMs: 0, text: line.text });
  for (const [i, { line, samples, speech }] of pick(lines.filter((l) => l.speech.pauses.length === 1)).entries()) {
    const pause = speech.pauses[0]!;
    turns.push({
      kind: 'unfinished',
      category: 'human unfinished',
      parts: [partOf(samples.slice(0, pause.from)), partOf(samples.slice(pause.to))],
      pauseMs: HELD_OUT_PAUSES_MS[i % HELD_OUT_PAUSES_MS.length]!,
      text: line.text,
    });
  }
  return interleaved(turns);
}

interface TurnResult {
  kind: Turn['kind'];
  category: string;
  text: string;
  /** The agent's first frame arrived before the caller's last speech frame was sent. */
  premature: boolean;
  /** Last speech frame sent → first agent frame received, ms; null when the agent never answered. */
  gapMs: number | null;
  /** Milliseconds into the pause inside an unfinished turn at which the agent's voice arrived, when it cut in there. */
  cutAtMs?: number;
  /**
   * When it cut in there: how long its voice still came once the caller went on (the last frame of that answer, less
   * the caller's first word after the pause; the far side plays a frame up to the pacer's 80 ms lead after it came).
   */
  talkOverMs?: number;
  /**
   * The recogniser's own end-of-turn verdict decided the end that brought the agent's answer (it shortened the wait the
   * words and silence set); null when no answer came, or no end was logged for it.
   */
  recogniserDecided: boolean | null;
}

/** The service's `end of turn` log lines: when (performance.now()) and whether the recogniser's verdict decided. */
const turnEnds = new Map<string, { at: number; recogniserDecided: boolean }[]>();
/**
 * Calls that left the recogniser under test for the next in the agent's chain (a stand-in too slow for the
 * fallback deadline on a busy machine moves the call to pocketsphinx): their later turns are not its.
 */
const movedOff = new Set<string>();
/** The end that brought an answer: the last one logged in the call after the turn began and before the answer came. */
function endBefore(callId: string, from: number, answerAt: number): boolean | null {
  const end = (turnEnds.get(callId) ?? []).filter((e) => e.at >= from && e.at <= answerAt).at(-1);
  return end?.recogniserDecided ?? null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A gap between the agent's frames longer than this ends its voice (the pacer sends one every 20 ms). */
const TALK_OVER_GAP_MS = 100;

/** One call speaking its turns one after another, each once the agent has answered and gone quiet. */
async function runCall(url: string, number: string, turns: Turn[]): Promise<{ callId: string; results: TurnResult[] }> {
  const { caller, callId } = await placeInboundCall(url, number, undefined, { history: false });
  let lastAgentFrame = 0;
  const arrivals: number[] = [];
  caller.on('message', (m) => {
    if (m.event === 'media') {
      lastAgentFrame = performance.now();
      arrivals.push(lastAgentFrame);
    }
  });
  const firstAgentFrameSince = (since: number) => arrivals.find((a) => a >= since) ?? 0;
  /** How long the agent's voice under way at `at` went on coming after it: 0 when none was (the answer was over). */
  const voiceGoingOnAt = (at: number) => {
    let last: number | null = null;
    for (const a of arrivals) {
      if (a < at - TALK_OVER_GAP_MS) continue;
      if (last === null ? a > at + TALK_OVER_GAP_MS : a - last > TALK_OVER_GAP_MS) break;
      last = a;
    }
    return last === null ? 0 : Math.max(0, last + FRAME_MS - at);
  };
  const quiet = async (ms: number, timeoutMs = 20_000) => {
    const started = performance.now();
    while (performance.now() - Math.max(lastAgentFrame, started) < ms && performance.now() - started < timeoutMs)
      await sleep(20);
  };
  await quiet(2_500); // the greeting
  const results: TurnResult[] = [];
  for (const turn of turns) {
    if (caller.closed) break;
    await caller.pause(400);
    const startedAt = performance.now();
    const { pauseAt, resumedAt, lastSpeechAt } = await speakTurn(caller, turn);
    // The answer (or an answer already under way) and its end.
    const deadline = performance.now() + 6_000;
    while (firstAgentFrameSince(startedAt) === 0 && performance.now() < deadline) await sleep(10);
    const first = firstAgentFrameSince(startedAt);
    const premature = first !== 0 && first < lastSpeechAt;
    results.push({
      kind: turn.kind,
      category: turn.category,
      text: turn.text,
      premature,
      gapMs: first === 0 ? null : first - lastSpeechAt,
      ...(premature && pauseAt !== null ? { cutAtMs: Math.round(first - pauseAt) } : {}),
      ...(premature && resumedAt !== null ? { talkOverMs: Math.round(voiceGoingOnAt(resumedAt)) } : {}),
      recogniserDecided: first === 0 ? null : endBefore(callId, startedAt, first),
    });
    // Longer than the longest end-of-turn wait, so a late answer is never taken for the next turn's.
    await quiet(2_500);
  }
  await caller.hangUp();
  return { callId, results };
}

/**
 * The call's transcript as the record keeps it (seconds from the call's start), to see which readings cut in and when
 * the agent spoke.
 */
async function heardIn(url: string, callId: string): Promise<string[]> {
  const res = await fetch(`${url}/v2/calls/${callId}`, { headers: { authorization: `Bearer ${key}` } });
  const record = (await res.json()) as {
    transcript?: { role: string; content: string; start_at: number; end_at: number }[] | null;
  };
  return (record.transcript ?? []).map(
    (m) => `${m.start_at.toFixed(2)}-${m.end_at.toFixed(2)} ${m.role}: ${m.content}`,
  );
}

/** When the frame holding a part's last loud sample was sent, once the part has been. */
function speechEndOf(caller: TwilioStreamCaller, part: Part): number {
  const quietFrames = Math.floor(part.tailMs / FRAME_MS);
  return caller.frameSentAt(caller.framesSent - 1 - quietFrames) ?? performance.now();
}

/**
 * Speaks the turn's parts with its pause between their speech; when the caller's speech paused
 * inside it and went on after that pause (null for a turn in one part), and when it ended.
 */
async function speakTurn(
  caller: TwilioStreamCaller,
  turn: Turn,
): Promise<{ pauseAt: number | null; resumedAt: number | null; lastSpeechAt: number }> {
  let pauseAt: number | null = null;
  let resumedAt: number | null = null;
  for (const [i, part] of turn.parts.entries()) {
    if (i > 0) {
      const before = turn.parts[i - 1]!;
      pauseAt = speechEndOf(caller, before);
      await caller.pause(Math.max(0, turn.pauseMs - before.tailMs - part.leadMs));
    }
    // The part's first frame with speech in it, past its lead-in.
    const firstFrame = caller.framesSent + Math.floor(part.leadMs / FRAME_MS);
    await caller.speak(part.mulaw);
    if (i > 0) resumedAt ??= caller.frameSentAt(firstFrame) ?? null;
  }
  return { pauseAt, resumedAt, lastSpeechAt: speechEndOf(caller, turn.parts.at(-1)!) };
}

const loadStart = loadavg();
const turns =
  args.set === 'held-out' ? await buildHeldOut() : args.set === 'numbers' ? await buildNumbers() : await buildTurns();
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
const artifacts = join(import.meta.dirname, '..', 'artifacts', 'bench');
const outName = args.set === 'turns' ? 'turns' : `turns-${args.set}`;
mkdirSync(artifacts, { recursive: true });
/**
 * Every log line goes to the file with --log; the `end of turn` lines are also kept, by call, to count what the
 * recogniser's verdict decided (the service logs at debug for them).
 */
const logFile = args.log ? pino.destination({ dest: join(artifacts, 'turns-log.jsonl'), sync: true }) : null;
const logger = pino(
  { level: 'debug' },
  {
    write(line: string) {
      logFile?.write(line);
      if (line.includes('"msg":"provider failed; the call moved to the next one"') && line.includes('"kind":"stt"'))
        movedOff.add(z.object({ call_id: z.string() }).parse(JSON.parse(line)).call_id);
      if (!line.includes('"msg":"end of turn"')) return;
      const entry = z.object({ call_id: z.string(), recogniser_decided: z.boolean() }).parse(JSON.parse(line));
      const ends = turnEnds.get(entry.call_id) ?? [];
      ends.push({ at: performance.now(), recogniserDecided: entry.recogniser_decided });
      turnEnds.set(entry.call_id, ends);
    },
  },
);
const service = await startService({ config, logger });
const providerKey = 'bench-provider-key';
const deepgram = args.stt.includes('deepgram') ? await startDeepgramStandIn(providerKey) : null;
const assemblyAi = Object.fromEntries(
  await Promise.all(
    (['assemblyai', 'assemblyai-unsure'] as const)
      .filter((r) => args.stt.includes(r))
      .map(
        async (r) =>
          [r, await startAssemblyAiStandIn(providerKey, { endOfTurnConfidence: ASSEMBLYAI_CONFIDENCE[r] })] as const,
      ),
  ),
);
if (deepgram || Object.keys(assemblyAi).length > 0) {
  // The stand-ins' recogniser loads its model once: before the calls, not during their first turn.
  const ear = await StandInEar.open(RATE, { guess: () => undefined, pause: () => undefined });
  ear.hear(new Int16Array(RATE / 10));
  await ear.settle();
  await ear.close();
}

/** The agent's stt section for a recogniser. */
function sttFor(recogniser: Recogniser): Record<string, unknown> | undefined {
  const phrases = args.hints.length > 0 ? { phrases: args.hints } : {};
  if (recogniser === 'embedded')
    return args.hints.length > 0 || args['stt-model']
      ? { ...phrases, ...(args['stt-model'] ? { model: args['stt-model'] } : {}) }
      : undefined;
  if (recogniser === 'pocketsphinx') return { engine: 'pocketsphinx', ...phrases };
  const standIn = recogniser === 'deepgram' ? deepgram : assemblyAi[recogniser];
  return {
    engine: recogniser === 'deepgram' ? 'deepgram' : 'assemblyai',
    base_url: standIn!.url,
    api_key: providerKey,
    language: 'en-US',
    ...phrases,
  };
}

const runs = args.stt.flatMap((recogniser) => args.modes.map((mode) => ({ recogniser, mode })));
console.error(
  `bench:turns: ${turns.length} turns (${turns.filter((t) => t.kind === 'unfinished').length} unfinished) over ${args.calls} calls per run: ${runs.map((r) => `${r.recogniser} ${r.mode}`).join(', ')}`,
);

const byRun: Record<string, TurnResult[]> = {};
const heardByRun: Record<string, string[][]> = {};
const movedByRun: Record<string, number> = {};
for (const [m, { recogniser, mode }] of runs.entries()) {
  const name = `${recogniser} ${mode}`;
  const number = `+1555010${String(9000 + m)}`;
  const stt = sttFor(recogniser);
  const res = await fetch(`${service.url}/v2/agents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      agent_id: `turns-${recogniser}-${mode}`,
      agent_name: `turns ${name}`,
      llm: { base_url: model.url, model: 'stub' },
      begin_message: 'Hello.',
      inbound_numbers: [number],
      endpointing: { mode },
      ...(stt ? { stt } : {}),
      inactivity_timeout_ms: 600_000,
    }),
  });
  if (res.status !== 201) throw new Error(`agent: ${res.status} ${await res.text()}`);
  const shares = Array.from({ length: args.calls }, (_, c) => turns.filter((_t, i) => i % args.calls === c));
  const calls = await Promise.all(shares.map((share) => runCall(service.url, number, share)));
  byRun[name] = calls.flatMap((c) => c.results);
  heardByRun[name] = await Promise.all(calls.map((c) => heardIn(service.url, c.callId)));
  movedByRun[name] = calls.filter((c) => movedOff.has(c.callId)).length;
  console.error(`bench:turns: ${name} done`);
}
await service.close();
await model.close();
await Promise.all([deepgram?.close(), ...Object.values(assemblyAi).map((a) => a.close())]);
rmSync(dataDir, { recursive: true, force: true });

/** The gaps of the turns the agent answered in time (not cut into, not left unanswered). */
const answered = (of: TurnResult[]): number[] => of.flatMap((r) => (r.gapMs === null || r.premature ? [] : [r.gapMs]));
/** How many of these turns' answers came from an end the recogniser's verdict decided, of those with one logged. */
const decidedOf = (results: TurnResult[]): string => {
  const logged = results.filter((r) => r.recogniserDecided !== null);
  return `${logged.filter((r) => r.recogniserDecided).length} / ${logged.length}`;
};
const rows = Object.entries(byRun).map(([name, results]) => {
  const unfinished = results.filter((r) => r.kind === 'unfinished');
  const finished = results.filter((r) => r.kind === 'finished');
  const cut = results.filter((r) => r.premature);
  const gaps = stats(answered(finished));
  // An unfinished turn the agent waited through is finished at its real end: the caller hears that gap too.
  const endGaps = stats(answered(results));
  const talkOver = stats(cut.flatMap((r) => (r.talkOverMs === undefined ? [] : [r.talkOverMs])));
  const [recogniser, mode] = name.split(' ');
  return {
    recogniser: recogniser!,
    mode: mode!,
    turns: results.length,
    'premature cut-offs': `${cut.length} (${((cut.length / results.length) * 100).toFixed(1)}%)`,
    'of unfinished turns cut': `${unfinished.filter((r) => r.premature).length} / ${unfinished.length}`,
    'gap after finished turns p50 (ms)': gaps?.p50 ?? 'n/a',
    'p90 (ms)': gaps?.p90 ?? 'n/a',
    "gap at every turn's end p50 / p90 (ms)": endGaps ? `${endGaps.p50} / ${endGaps.p90}` : 'n/a',
    // Once cut in on, how long the caller who went on still heard the agent.
    'talk-over when cut p50 / max (ms)': talkOver ? `${talkOver.p50} / ${talkOver.max}` : 'n/a',
    unanswered: results.filter((r) => r.gapMs === null).length,
    'signal decided: cut-offs': decidedOf(cut),
    'finished answers': decidedOf(finished.filter((r) => !r.premature)),
    'calls moved to the fallback': movedByRun[name] ?? 0,
  };
});
/** Per category: the cut-offs among its turns, and the gap after those answered in time. */
const categoryRows = Object.entries(byRun).flatMap(([name, results]) =>
  [...new Set(results.map((r) => r.category))].sort().map((category) => {
    const of = results.filter((r) => r.category === category);
    const gaps = stats(answered(of));
    return {
      run: name,
      category,
      turns: of.length,
      'cut off': `${of.filter((r) => r.premature).length} (${((of.filter((r) => r.premature).length / of.length) * 100).toFixed(1)}%)`,
      'gap p50 (ms)': gaps?.p50 ?? 'n/a',
      'gap p90 (ms)': gaps?.p90 ?? 'n/a',
      unanswered: of.filter((r) => r.gapMs === null).length,
    };
  }),
);
const md = [
  `# bench:turns${args.set === 'turns' ? '' : ` --set ${args.set}`} — ${turns.length} caller turns per run, ${args.calls} calls at once, embedded VAD and voice${args['stt-model'] ? ` (moonshine ${args['stt-model']})` : ''}, instant model, word ends ${args.ends}`,
  '',
  markdownTable(rows),
  '',
  ...(args.set !== 'turns' ? ['By category:', '', markdownTable(categoryRows), ''] : []),
  `Cut turns: ${Object.entries(byRun)
    .map(
      ([name, r]) =>
        `${name}: ${
          r
            .filter((x) => x.premature)
            .map(
              (x) =>
                `${JSON.stringify(x.text)}${x.cutAtMs === undefined ? '' : ` (${x.cutAtMs} ms into the pause${x.talkOverMs === undefined ? '' : `, ${x.talkOverMs} ms over the caller`})`}${x.recogniserDecided ? ' [signal]' : ''}`,
            )
            .join(', ') || 'none'
        }`,
    )
    .join('; ')}`,
  '',
  `load average ${loadStart.map((x) => x.toFixed(2)).join(' ')} at the start, ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')} at the end`,
].join('\n');
writeArtifacts(outName, { when: new Date().toISOString(), args, rows, categoryRows, byRun, heard: heardByRun }, md);
console.log(md);
process.exit(0);
