// npm run bench:turn-voice
// What each voice cue (src/audio/prosody.ts) tells about a pause, on human speech the rules were
// never written for: the game voices (ten actors, bench/sets/game-voices.ts) and the asterisk
// prompts (recorded telephone prompts), both through the phone path (8 kHz, μ-law both ways).
// Every utterance gives one "finished" ending (its last word) and one "unfinished" ending at each
// pause of 200 ms or more inside it (the shortest pause the VAD reports): the speech up to there,
// as the service holds it when the VAD reports that pause. For each cue: how well it alone tells
// the two apart (AUC: the chance a finished ending scores more "finished" than an unfinished one;
// 0.5 is a coin), and a combined score, logistic weights fitted here on five of the game's actors
// (--fit prints them) and measured on the other five and on the prompts.
//
// With Debian's aubio-tools installed (`apt-get install aubio-tools`; bench only), the pitch
// tracker is first checked against a reference: aubio's YIN on the same phone-path audio, window
// for window, where both hear a voice.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { concatPcm } from '../src/audio/pcm.ts';
import { PROSODY, ProsodyAnalyser, SpeakerRange, type VoiceEnding } from '../src/audio/prosody.ts';
import { readWavFile, writeWavFile } from '../src/audio/wav.ts';
import { FliteTtsEngine } from '../src/speech/tts/flite.ts';
import { telephone } from '../test/speech/stt/helpers.ts';
import { asteriskPrompts } from '../test/support/test-sets.ts';
import { markdownTable } from './report.ts';
import { gameVoices } from './sets/game-voices.ts';
import { oneSentence, speechPauses } from './sets/held-out-turns.ts';
import { FINISHED, OTHER_UNFINISHED, TRAILING_AND, VOICES } from './sets/turn-words-phrases.ts';

const { values } = parseArgs({ options: { fit: { type: 'boolean' } } });

const RATE = 8000;
const FRAME = RATE / 100;
const MIN_PAUSE_MS = 200;
/** What the service hands the analyser at a pause: the speech before it. */
const CONTEXT_MS = 1500;

interface Ending {
  set: 'game-fit' | 'game-held' | 'asterisk' | 'flite';
  finished: boolean;
  cues: VoiceEnding;
  id: string;
}

/** A recording as a phone call hears it (test/speech/stt/helpers.ts telephone: 8 kHz, μ-law both ways). */
const phone = (samples: Int16Array, sampleRate: number): Int16Array =>
  telephone({ text: '', samples, sampleRate }).samples;

function endingsOf(
  samples: Int16Array,
  analyser: ProsodyAnalyser,
  floor: number | null,
): { finished: boolean; cues: VoiceEnding }[] {
  const speech = speechPauses(samples, RATE, MIN_PAUSE_MS);
  if (!speech) return [];
  const ends = { pauses: speech.pauses.map((p) => p.from), end: speech.end };
  const before = (at: number) =>
    analyser.ending(samples.subarray(Math.max(0, at - (CONTEXT_MS * RATE) / 1000), at + FRAME * 5), floor);
  return [
    ...ends.pauses.map((at) => ({ finished: false, cues: before(at) })),
    { finished: true, cues: before(ends.end) },
  ];
}

const AUBIO = '/usr/bin/aubiopitch';

/**
 * The tracker against aubio's YIN, over the windows both call voiced: the share within a semitone, and the share off
 * by more than 20% (gross errors, octave jumps mostly). aubio's frames are aligned to ours by the shift that agrees
 * best (its time stamps mark a frame's start, ours a window's centre).
 */
async function referenceAgreement(
  utterances: readonly { samples: Int16Array }[],
  analyser: ProsodyAnalyser,
): Promise<{ windows: number; withinSemitone: number; gross: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'turn-voice-'));
  const pairs: [number, number][][] = Array.from({ length: 9 }, () => []);
  try {
    for (const [i, u] of utterances.entries()) {
      const file = join(dir, `${i}.wav`);
      await writeWavFile(file, { samples: u.samples, sampleRate: RATE });
      const hop = (RATE * PROSODY.hopMs) / 1000;
      const args = ['-i', file, '-p', 'yin', '-B', String((RATE * PROSODY.windowMs) / 1000), '-H', String(hop)];
      const theirs = execFileSync(AUBIO, [...args, '-r', String(RATE)], { encoding: 'utf8' })
        .trim()
        .split('\n')
        .map((line) => Number(line.split(/\s+/)[1]));
      const ours = analyser.track(u.samples);
      for (let shift = -4; shift <= 4; shift++)
        ours.forEach((w, k) => {
          const hz = theirs[k + shift];
          if (w.pitch !== null && hz !== undefined && hz >= PROSODY.minHz && hz <= PROSODY.maxHz)
            pairs[shift + 4]!.push([100 * 2 ** (w.pitch / 12), hz]);
        });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const agreement = (p: [number, number][]) => p.filter(([a, b]) => Math.abs(12 * Math.log2(a / b)) <= 1).length;
  const best = pairs.reduce((m, p) => (agreement(p) / (p.length || 1) > agreement(m) / (m.length || 1) ? p : m));
  return {
    windows: best.length,
    withinSemitone: agreement(best) / best.length,
    gross: best.filter(([a, b]) => Math.abs(a / b - 1) > 0.2).length / best.length,
  };
}

/** The chance a finished ending scores higher than an unfinished one (ties count half). */
function auc(endings: readonly Ending[], score: (e: VoiceEnding) => number | null): { auc: number; n: number } {
  const scored = endings.flatMap((e) => {
    const s = score(e.cues);
    return s === null ? [] : [{ s, finished: e.finished }];
  });
  const pos = scored.filter((x) => x.finished).map((x) => x.s);
  const neg = scored.filter((x) => !x.finished).map((x) => x.s);
  let wins = 0;
  for (const p of pos) for (const n of neg) wins += p > n ? 1 : p === n ? 0.5 : 0;
  return { auc: pos.length && neg.length ? wins / (pos.length * neg.length) : NaN, n: scored.length };
}

/**
 * Weights of the combined score on `features`, as --fit printed them (fitted on the game actors Barry James, Brad
 * Lavelle, Enn Reitel, Jon Coleman and Regina Reagan).
 */
const VOICE_CUE_WEIGHTS = { bias: 0.2135, weights: [-0.01051, -0.005404, -0.133, 0.002964] } as const;

/** The chance, from the voice alone, that the speech before a pause finished the turn (0–1). */
function voiceFinished(cues: VoiceEnding): number {
  const { bias, weights } = VOICE_CUE_WEIGHTS;
  return 1 / (1 + Math.exp(-(bias + features(cues).reduce((s, v, i) => s + v * weights[i]!, 0))));
}

/** Features as the combined score reads them (a missing cue is neutral). */
const features = (c: VoiceEnding): number[] => [
  c.finalSlope ?? 0,
  c.finalLevel ?? 0,
  c.lengthening === null ? 0 : Math.log2(c.lengthening),
  c.fade ?? 0,
];

/** Logistic regression by gradient descent on standardised features; returns weights for raw features. */
function fitWeights(endings: readonly Ending[]): { bias: number; weights: number[] } {
  const xs = endings.map((e) => features(e.cues));
  const ys = endings.map((e) => (e.finished ? 1 : 0));
  const k = xs[0]!.length;
  const mean = Array.from({ length: k }, (_, j) => xs.reduce((s, x) => s + x[j]!, 0) / xs.length);
  const sd = Array.from({ length: k }, (_, j) =>
    Math.sqrt(xs.reduce((s, x) => s + (x[j]! - mean[j]!) ** 2, 0) / xs.length || 1),
  );
  const z = xs.map((x) => x.map((v, j) => (v - mean[j]!) / sd[j]!));
  // Finished endings are fewer than pauses: each class weighs the same.
  const pos = ys.filter((y) => y === 1).length;
  const classWeight = (y: number) => (y === 1 ? ys.length / (2 * pos) : ys.length / (2 * (ys.length - pos)));
  let b = 0;
  const w = new Array<number>(k).fill(0);
  for (let step = 0; step < 4000; step++) {
    let gb = 0;
    const gw = new Array<number>(k).fill(0);
    z.forEach((x, i) => {
      const p = 1 / (1 + Math.exp(-(b + x.reduce((s, v, j) => s + v * w[j]!, 0))));
      const err = (p - ys[i]!) * classWeight(ys[i]!);
      gb += err;
      x.forEach((v, j) => (gw[j]! += err * v));
    });
    b -= (0.5 * gb) / z.length;
    w.forEach((_, j) => (w[j]! -= (0.5 * (gw[j]! + 0.01 * w[j]!)) / z.length));
  }
  const weights = w.map((wj, j) => wj / sd[j]!);
  return { bias: b - weights.reduce((s, wj, j) => s + wj * mean[j]!, 0), weights };
}

async function main(): Promise<void> {
  const analyser = new ProsodyAnalyser(RATE);
  const actors = [...new Set((await gameVoices()).map((v) => v.actor))].sort();
  const fitActors = new Set(actors.filter((_, i) => i % 2 === 0));
  const utterances: { id: string; speaker: string; set: Ending['set']; samples: Int16Array; text: string }[] = [];
  for (const line of await gameVoices()) {
    const wav = await readWavFile(line.path);
    const set = fitActors.has(line.actor) ? 'game-fit' : 'game-held';
    utterances.push({
      id: line.id,
      speaker: line.actor,
      set,
      samples: phone(wav.samples, wav.sampleRate),
      text: line.text,
    });
  }
  // One speaker recorded every prompt.
  for (const prompt of asteriskPrompts()) {
    const wav = await readWavFile(prompt.file);
    const samples = phone(wav.samples, wav.sampleRate);
    utterances.push({ id: prompt.id, speaker: 'asterisk', set: 'asterisk', samples, text: prompt.text });
  }
  // flite says each phrase alone, as the call benches make a turn's parts: an unfinished phrase is its own synthesis.
  const tts = new FliteTtsEngine();
  const flite: { samples: Int16Array; finished: boolean; voice: string; id: string }[] = [];
  for (const voice of VOICES)
    for (const [phrases, finished] of [
      [TRAILING_AND, false],
      [OTHER_UNFINISHED, false],
      [FINISHED, true],
    ] as const)
      for (const text of phrases) {
        const chunks: Int16Array[] = [];
        for await (const c of tts.synthesize(text, { sampleRate: RATE, voiceId: voice })) chunks.push(c.samples);
        flite.push({ samples: phone(concatPcm(chunks), RATE), finished, voice, id: `${voice}: ${text}` });
      }
  await tts.close();
  // Each speaker's range from all their lines, as a call learns its caller's from the turns so far.
  const ranges = new Map<string, SpeakerRange>();
  for (const u of utterances) {
    const range = ranges.get(u.speaker) ?? new SpeakerRange(Infinity);
    range.add(analyser.ending(u.samples).pitches);
    ranges.set(u.speaker, range);
  }
  for (const f of flite) {
    const range = ranges.get(f.voice) ?? new SpeakerRange(Infinity);
    range.add(analyser.ending(f.samples).pitches);
    ranges.set(f.voice, range);
  }
  // A pause inside a line of several sentences may follow a finished one: only one-sentence lines give endings.
  const endings: Ending[] = utterances
    .filter((u) => oneSentence(u.text))
    .flatMap((u) =>
      endingsOf(u.samples, analyser, ranges.get(u.speaker)!.floor()).map((e) => ({ ...e, set: u.set, id: u.id })),
    );
  for (const f of flite) {
    const end = speechPauses(f.samples, RATE, MIN_PAUSE_MS)?.end;
    if (end === undefined) continue;
    const cues = analyser.ending(
      f.samples.subarray(Math.max(0, end - (CONTEXT_MS * RATE) / 1000), end + FRAME * 5),
      ranges.get(f.voice)!.floor(),
    );
    endings.push({ set: 'flite', finished: f.finished, cues, id: f.id });
  }
  const reference = existsSync(AUBIO) ? await referenceAgreement(utterances, analyser) : null;
  if (values.fit) {
    const fitted = fitWeights(endings.filter((e) => e.set === 'game-fit'));
    console.log('fitted on', [...fitActors].join(', '), JSON.stringify(fitted));
  }
  const cues: [string, (c: VoiceEnding) => number | null][] = [
    ['pitch falling at the end (−slope)', (c) => (c.finalSlope === null ? null : -c.finalSlope)],
    ["pitch ending at the speaker's low end (−level)", (c) => (c.finalLevel === null ? null : -c.finalLevel)],
    ['last syllable drawn out (lengthening)', (c) => c.lengthening],
    ['voice fading (−fade)', (c) => (c.fade === null ? null : -c.fade)],
    ['combined (logistic, VOICE_CUE_WEIGHTS)', (c) => voiceFinished(c)],
  ];
  const sets = ['game-fit', 'game-held', 'asterisk', 'flite'] as const;
  const rows = cues.map(([name, score]) => ({
    cue: name,
    ...Object.fromEntries(
      sets.map((s) => {
        const r = auc(
          endings.filter((e) => e.set === s),
          score,
        );
        return [`${s} AUC (n)`, `${r.auc.toFixed(3)} (${r.n})`];
      }),
    ),
  }));
  const counts = sets.map(
    (s) =>
      `${s}: ${endings.filter((e) => e.set === s && e.finished).length} finished, ${endings.filter((e) => e.set === s && !e.finished).length} unfinished`,
  );
  // How the combined score's bands split the held-out endings: what the policy does with them.
  const held = endings.filter((e) => e.set === 'game-held' || e.set === 'asterisk');
  const edges = [0, 0.3, 0.5, 0.7, 1];
  const bands = edges.slice(0, -1).map((lo, i) => {
    const hi = edges[i + 1]!;
    const inBand = held.filter((e) => {
      const s = voiceFinished(e.cues);
      return s >= lo && (s < hi || hi === 1);
    });
    return {
      'combined score': `${lo.toFixed(1)}–${hi.toFixed(1)}`,
      finished: inBand.filter((e) => e.finished).length,
      unfinished: inBand.filter((e) => !e.finished).length,
    };
  });
  console.log(
    [
      `# bench:turn-voice — load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
      '',
      `Endings: ${counts.join('; ')}. Fitted on the game actors ${[...fitActors].join(', ')}.`,
      `Weights in use: ${JSON.stringify(VOICE_CUE_WEIGHTS)}`,
      reference
        ? `Pitch against aubio's YIN (${reference.windows} windows both call voiced): ${(reference.withinSemitone * 100).toFixed(1)}% within a semitone, ${(reference.gross * 100).toFixed(1)}% off by more than 20%.`
        : 'Pitch not checked against a reference: aubio-tools is not installed.',
      '',
      markdownTable(rows),
      '',
      'Held-out endings (game-held and asterisk) by combined score:',
      '',
      markdownTable(bands),
    ].join('\n'),
  );
}

await main();
