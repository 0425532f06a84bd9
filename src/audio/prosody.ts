// How a stretch of speech ends, heard from the voice rather than the words: the cues people use to
// tell a finished turn from a pause inside one. A finished statement usually ends with the pitch
// falling to the low end of the speaker's range, the last syllable drawn out and the voice fading;
// a speaker who holds the turn keeps the pitch level or raised and stops short. Computed from the
// caller's PCM at a pause, with no model: the pitch of each 40 ms window (McLeod's pitch method,
// from the `pitchy` package), its loudness, and the runs of voiced windows (roughly, syllables).
// The cues are measured one by one on human speech in bench/turn-voice.ts; they proved too weak
// there for the end of turn to use yet (bench/README.md, "The voice's turn cues").

import { PitchDetector } from 'pitchy';

export const PROSODY = {
  /** Each analysis window: two periods of a 50 Hz voice. */
  windowMs: 40,
  hopMs: 10,
  /** Pitch outside this range is a tracking error (an octave jump, a fricative). */
  minHz: 60,
  maxHz: 450,
  /** McLeod clarity at or above which a window is voiced. */
  minClarity: 0.8,
  /** A window this many dB under the stretch's loudest is not speech (breath, line noise). */
  speechDb: 30,
  /** Nor is a window under this level, dBFS (a silent line). */
  floorDb: -60,
  /** The pitch movement at the end is read over the last voiced windows spanning this long. */
  finalSpanMs: 200,
  /** The fade is read over the last stretch of speech this long. */
  fadeSpanMs: 200,
  /** A voiced run may bridge a gap of this many unvoiced windows (a plosive inside a syllable). */
  runGapWindows: 1,
  /** At least this many voiced windows for a pitch movement to be read at all. */
  minVoicedWindows: 5,
} as const;

/** What the end of a stretch of speech sounds like; a cue is null where the audio does not carry it. */
export interface VoiceEnding {
  /** The pitch's slope over the final voiced span, semitones per second (negative: falling). */
  finalSlope: number | null;
  /**
   * The final pitch above the speaker's low end (the `floor` given, else the stretch's own 10th percentile), semitones:
   * near 0 is ending at the bottom of the voice's range.
   */
  finalLevel: number | null;
  /** The last voiced run's length over the median of the runs before it (over 1: drawn out). */
  lengthening: number | null;
  /** Loudness slope over the last fadeSpanMs of speech, dB per second (negative: fading). */
  fade: number | null;
  /** Milliseconds of speech analysed (from the first to the last window over the speech level). */
  speechMs: number;
  /** The pitch of every voiced window, semitones re 100 Hz: what a speaker's range is learnt from (SpeakerRange). */
  pitches: number[];
}

/** A speaker's pitch range, learnt from their speech so far: its low end is where finished statements fall to. */
export class SpeakerRange {
  private readonly pitches: number[] = [];

  constructor(private readonly keep = 3000) {}

  add(pitches: readonly number[]): void {
    this.pitches.push(...pitches);
    if (this.pitches.length > this.keep) this.pitches.splice(0, this.pitches.length - this.keep);
  }

  /** The 10th percentile of the voiced pitch heard, semitones re 100 Hz; null before enough of it. */
  floor(): number | null {
    if (this.pitches.length < PROSODY.minVoicedWindows * 4) return null;
    return quantile(this.pitches, 0.1);
  }
}

/** The q-quantile of a non-empty list (nearest rank). */
function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

const median = (values: readonly number[]): number => quantile(values, 0.5);

/** Least-squares slope of y over x (x in seconds); null for fewer than two points. */
function slope(points: readonly { x: number; y: number }[]): number | null {
  if (points.length < 2) return null;
  const mx = points.reduce((s, p) => s + p.x, 0) / points.length;
  const my = points.reduce((s, p) => s + p.y, 0) / points.length;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.x - mx) * (p.y - my);
    den += (p.x - mx) ** 2;
  }
  return den === 0 ? null : num / den;
}

const semitones = (hz: number): number => 12 * Math.log2(hz / 100);

/**
 * The tracker's octave errors folded back: a window about an octave (within 3 semitones of ±12) off the median of the
 * five windows around it is read as the voice's own pitch an octave away. Voices do leap, but not by an octave and
 * back within a syllable.
 */
export function unOctaved(pitches: readonly number[]): number[] {
  return pitches.map((p, i) => {
    const around = median(pitches.slice(Math.max(0, i - 2), i + 3));
    return Math.abs(p - around - 12) <= 3 ? p - 12 : Math.abs(p - around + 12) <= 3 ? p + 12 : p;
  });
}

/** One analysis window. */
export interface PitchWindow {
  /** Centre of the window, seconds from the start of the samples. */
  at: number;
  db: number;
  /** Semitones re 100 Hz; null when unvoiced. */
  pitch: number | null;
}

/**
 * Reads the windows of `samples`, reusing one detector per window length (the FFT plan is the costly part) so
 * analysing a pause allocates little.
 */
export class ProsodyAnalyser {
  private readonly detector: PitchDetector<Float32Array>;
  private readonly input: Float32Array;
  private readonly windowSamples: number;
  private readonly hopSamples: number;

  constructor(private readonly rate: number) {
    this.windowSamples = Math.round((rate * PROSODY.windowMs) / 1000);
    this.hopSamples = Math.round((rate * PROSODY.hopMs) / 1000);
    // The detector's own defaults: no volume gate (loudness is judged here, against the stretch's loudest).
    this.detector = PitchDetector.forFloat32Array(this.windowSamples);
    this.input = new Float32Array(this.windowSamples);
  }

  /** How the speech in `samples` (PCM16 at the analyser's rate, speech then at most a little quiet) ends. */
  ending(samples: Int16Array, floor: number | null = null): VoiceEnding {
    const windows = this.track(samples);
    const loudest = windows.reduce((m, w) => Math.max(m, w.db), -Infinity);
    const speechDb = Math.max(loudest - PROSODY.speechDb, PROSODY.floorDb);
    const speech = windows.filter((w) => w.db >= speechDb);
    if (speech.length === 0)
      return { finalSlope: null, finalLevel: null, lengthening: null, fade: null, speechMs: 0, pitches: [] };
    const first = speech[0]!.at;
    const last = speech.at(-1)!.at;
    const inSpeech = windows.filter((w) => w.at >= first && w.at <= last);
    const voiced = inSpeech.filter((w) => w.pitch !== null && w.db >= speechDb);
    const fadeFrom = last - PROSODY.fadeSpanMs / 1000;
    const pitches = unOctaved(voiced.map((w) => w.pitch!));
    return {
      ...this.pitchEnding(
        voiced.map((w, i) => ({ x: w.at, y: pitches[i]! })),
        floor,
      ),
      lengthening: this.lengthening(inSpeech, speechDb),
      fade: slope(inSpeech.filter((w) => w.at >= fadeFrom).map((w) => ({ x: w.at, y: w.db }))),
      speechMs: Math.round((last - first) * 1000 + PROSODY.windowMs),
      pitches,
    };
  }

  /** Every window of `samples`, hopMs apart: its loudness and, where voiced, its pitch. */
  track(samples: Int16Array): PitchWindow[] {
    const out: PitchWindow[] = [];
    const n = this.windowSamples;
    for (let start = 0; start + n <= samples.length; start += this.hopSamples) {
      let energy = 0;
      for (let i = 0; i < n; i++) {
        const v = samples[start + i]! / 32768;
        this.input[i] = v;
        energy += v * v;
      }
      const db = 10 * Math.log10(energy / n + 1e-12);
      const [hz, clarity] = this.detector.findPitch(this.input, this.rate);
      const voiced = clarity >= PROSODY.minClarity && hz >= PROSODY.minHz && hz <= PROSODY.maxHz;
      out.push({ at: (start + n / 2) / this.rate, db, pitch: voiced ? semitones(hz) : null });
    }
    return out;
  }

  private pitchEnding(
    voiced: { x: number; y: number }[],
    floor: number | null,
  ): Pick<VoiceEnding, 'finalSlope' | 'finalLevel'> {
    if (voiced.length < PROSODY.minVoicedWindows) return { finalSlope: null, finalLevel: null };
    // A lone window off its neighbours is the tracker's error, not the voice: each pitch is the median of itself and
    // its neighbours.
    const smooth = voiced.map((p, i) => ({
      x: p.x,
      y: median(voiced.slice(Math.max(0, i - 1), i + 2).map((v) => v.y)),
    }));
    const end = smooth.at(-1)!.x;
    const final = smooth.filter((p) => p.x >= end - PROSODY.finalSpanMs / 1000);
    const finalPitch = median(final.slice(-3).map((p) => p.y));
    return {
      finalSlope: final.length >= 3 ? slope(final) : null,
      finalLevel:
        finalPitch -
        (floor ??
          quantile(
            smooth.map((p) => p.y),
            0.1,
          )),
    };
  }

  /** Runs of voiced windows (bridging short gaps): the last one's length against the median of those before. */
  private lengthening(inSpeech: PitchWindow[], speechDb: number): number | null {
    const runs: number[] = [];
    let length = 0;
    let gap = 0;
    for (const w of inSpeech) {
      if (w.pitch !== null && w.db >= speechDb) {
        length += 1 + gap;
        gap = 0;
      } else if (length > 0 && ++gap > PROSODY.runGapWindows) {
        runs.push(length);
        length = 0;
        gap = 0;
      }
    }
    if (length > 0) runs.push(length);
    if (runs.length < 3) return null;
    return runs.at(-1)! / median(runs.slice(0, -1));
  }
}
