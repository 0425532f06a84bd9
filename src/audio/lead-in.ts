// A voice's silent lead-in, cut so that the first frame a caller hears already carries the voice.
// Voices start a synthesis with 60–300 ms of near-silence: flite's voices with a noise floor of
// −55 to −90 dBFS whose single samples poke above −50 dBFS long before the first word (so a
// per-sample threshold stops in the noise), a provider's first chunk may be all silence. The onset
// here is the first 5 ms window whose RMS comes within `relativeDb` of the voice's own level (its
// loudest window), never under an absolute floor: a quiet voice is not cut into, a loud one's
// noise is not taken for speech; the start then walks back over a soft first sound's rise. Engine-
// independent: it works on any PCM16 stream, whole or in chunks of any size, with the same result.
//
// What is kept before the start depends on what the caller heard before it (LeadInTrimmer's `first`):
// - the first synthesis of a reply follows the caller's turn: any silence there is dead air, so
//   only `preRollMs` is kept (a soft "h" or "f" starts before the window that reaches the level),
//   faded in over `fadeInMs` so the cut makes no click;
// - a later sentence of the same reply follows the previous one's own trailing silence: a pause
//   between sentences is natural and stays, but a synthesis's lead-in on top of that doubles it,
//   so at most `pieceGapMs` of it is kept.

export const LEAD_IN = {
  /** Energy is measured over windows this long. */
  windowMs: 5,
  /** The voice starts at the first window within this many dB of the voice's loudest window. */
  relativeDb: 35,
  /** A window quieter than this RMS (−55 dBFS) is never the voice, however quiet the voice. */
  floor: 58,
  /** The voice's loudest window before any of it was heard (−10 dBFS: flite's voices at 8 kHz). */
  defaultLevel: 10_362,
  /**
   * From the window that reaches the onset threshold, the start walks back over the windows just before it no more
   * than this many dB under that threshold (a soft "s" or "sh" rises slowly), at most `riseMs`.
   */
  riseDb: 8,
  riseMs: 25,
  /** Kept before the onset of a reply's first synthesis. */
  preRollMs: 10,
  /** The kept pre-roll rises from zero over this long. */
  fadeInMs: 5,
  /** Kept before the onset of a later synthesis of the same reply: a short natural gap. */
  pieceGapMs: 100,
} as const;

const samplesFor = (rate: number, ms: number) => Math.round((rate * ms) / 1000);

/** RMS of samples[from, to). */
function rms(samples: Int16Array, from: number, to: number): number {
  let sum = 0;
  for (let i = from; i < to; i++) sum += samples[i]! * samples[i]!;
  return Math.sqrt(sum / (to - from));
}

/** The RMS a window needs to count as the voice, for a voice whose loudest window is `level`. */
export function onsetThreshold(level: number): number {
  return Math.max(LEAD_IN.floor, level * 10 ** (-LEAD_IN.relativeDb / 20));
}

/**
 * Where the voice starts in `samples`: the first sample of the first whole window (counted from
 * `from`, which is a window boundary) whose RMS reaches `threshold`; -1 when no whole window does.
 */
export function voiceOnset(samples: Int16Array, window: number, threshold: number, from = 0): number {
  for (let at = from; at + window <= samples.length; at += window)
    if (rms(samples, at, at + window) >= threshold) return at;
  return -1;
}

/**
 * Where the voice starts, rise included: from the first window at `from` or after that reaches the onset threshold
 * of a voice at `level`, back over the windows before it (not before `earliest`) that reach the threshold less
 * `riseDb`, at most `riseMs`; -1 when no window reaches the onset threshold.
 */
export function voiceStart(samples: Int16Array, rate: number, level: number, from = 0, earliest = 0): number {
  const window = samplesFor(rate, LEAD_IN.windowMs);
  const threshold = onsetThreshold(level);
  const onset = voiceOnset(samples, window, threshold, from);
  if (onset === -1) return -1;
  const rising = Math.max(LEAD_IN.floor, threshold * 10 ** (-LEAD_IN.riseDb / 20));
  const limit = Math.max(earliest, onset - samplesFor(rate, LEAD_IN.riseMs));
  let start = onset;
  while (start - window >= limit && rms(samples, start - window, start) >= rising) start -= window;
  return start;
}

/** `samples` with its first `fade` samples ramped up linearly from zero (a copy). */
export function fadedIn(samples: Int16Array, fade: number): Int16Array {
  const out = samples.slice();
  const n = Math.min(fade, out.length);
  for (let i = 0; i < n; i++) out[i] = Math.round((out[i]! * i) / n);
  return out;
}

/**
 * The lead-in of whole audio: what is left when at most `keep` samples before the onset stay (faded
 * in when anything was cut). Audio that never reaches the threshold comes back whole.
 */
export function trimLeadIn(samples: Int16Array, rate: number, keep: number, level: number = LEAD_IN.defaultLevel) {
  const onset = voiceStart(samples, rate, level);
  if (onset === -1 || onset <= keep) return samples;
  return fadedIn(samples.subarray(onset - keep), samplesFor(rate, LEAD_IN.fadeInMs));
}

/**
 * The lead-in cut from one synthesis's audio as it comes in chunks: push() each chunk (audio is
 * held back, at most the part that may be kept, until the voice starts), end() at its end. The
 * voice's level comes from what it said before (voiceLevel of the previous synthesis on the same
 * voice), so the threshold follows the voice: a quiet provider voice, a loud one.
 */
export class LeadInTrimmer {
  private readonly window: number;
  private readonly fade: number;
  private readonly keep: number;
  private readonly rise: number;
  private readonly level: number;
  private loudest = 0;
  private leading = true;
  private dropped = 0;
  private held = new Int16Array(0);
  /** Where in `held` the next whole window starts (held is always cut at window boundaries). */
  private scanned = 0;
  /** The window being measured for the level: its sum of squares and its length so far. */
  private windowSum = 0;
  private windowFill = 0;

  /**
   * `first` when the synthesis opens a reply (after the caller's turn, or at the call's start), else
   * it follows a sentence of the same reply; `level` is the voice's loudest window heard so far.
   */
  constructor(
    readonly sampleRate: number,
    options: { first: boolean; level?: number | undefined },
  ) {
    this.window = samplesFor(sampleRate, LEAD_IN.windowMs);
    this.fade = samplesFor(sampleRate, LEAD_IN.fadeInMs);
    this.keep = samplesFor(sampleRate, options.first ? LEAD_IN.preRollMs : LEAD_IN.pieceGapMs);
    this.rise = samplesFor(sampleRate, LEAD_IN.riseMs);
    this.level = options.level ?? LEAD_IN.defaultLevel;
  }

  /** The voice's loudest 5 ms window (RMS): this synthesis's once it had voice, else the one given. */
  get voiceLevel(): number {
    // A synthesis that was all quiet says nothing of the voice's level.
    return this.loudest >= LEAD_IN.floor ? this.loudest : this.level;
  }

  /** Samples cut from the synthesis's start so far. */
  get cut(): number {
    return this.dropped;
  }

  /** More of the synthesis: what may go out now (nothing while still in the lead-in). */
  push(samples: Int16Array): Int16Array {
    if (!this.leading) {
      this.measure(samples);
      return samples;
    }
    const joined = new Int16Array(this.held.length + samples.length);
    joined.set(this.held);
    joined.set(samples, this.held.length);
    const onset = voiceStart(joined, this.sampleRate, this.level, this.scanned);
    if (onset === -1) {
      // Keep what may still be kept or be the voice's rise, and the part of a window not yet whole; drop whole
      // windows only, so that windows stay where they would be in the whole audio.
      const whole = this.scanned + Math.floor((joined.length - this.scanned) / this.window) * this.window;
      const drop = Math.floor(Math.max(0, whole - this.keep - this.rise) / this.window) * this.window;
      this.held = joined.slice(drop);
      this.scanned = whole - drop;
      this.dropped += drop;
      return new Int16Array(0);
    }
    this.leading = false;
    this.held = new Int16Array(0);
    const start = Math.max(0, onset - this.keep);
    this.dropped += start;
    this.measure(joined.subarray(onset));
    // Faded in only where something was cut before it (here or in an earlier chunk).
    return this.dropped > 0 ? fadedIn(joined.subarray(start), this.fade) : joined;
  }

  /** The synthesis is over: one that never got loud still gives what may be kept of it. */
  end(): Int16Array {
    const held = this.leading ? this.held : new Int16Array(0);
    const rest = held.subarray(Math.max(0, held.length - this.keep));
    this.dropped += held.length - rest.length;
    this.leading = false;
    this.held = new Int16Array(0);
    return this.dropped > 0 ? fadedIn(rest, this.fade) : rest;
  }

  /** Tracks the loudest window of the voice once it has started. */
  private measure(samples: Int16Array): void {
    for (const s of samples) {
      this.windowSum += s * s;
      if (++this.windowFill < this.window) continue;
      this.loudest = Math.max(this.loudest, Math.sqrt(this.windowSum / this.window));
      this.windowSum = 0;
      this.windowFill = 0;
    }
  }
}

/**
 * Whether a frame heard on the line carries a voice (at `level`, by default a voice like flite's):
 * some 5 ms window of it reaches the onset threshold. Lead-in noise does not; a voice's first
 * frame after the cut does.
 */
export function carriesVoice(frame: Int16Array, rate: number, level: number = LEAD_IN.defaultLevel): boolean {
  return voiceOnset(frame, samplesFor(rate, LEAD_IN.windowMs), onsetThreshold(level)) !== -1;
}
