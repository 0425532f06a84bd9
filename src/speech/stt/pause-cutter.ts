// Finds the pauses inside an utterance, so a recogniser that reads whole utterances can read
// while the caller is still speaking, or has just stopped: at a pause it reads what came before,
// and at the end of the turn little or nothing is left to read.

export interface PauseCutterOptions {
  sampleRate: number;
  /** Quiet this long (ms) is a pause between phrases, not a gap between words. */
  pauseMs: number;
  /** A chunk is quiet below the loudest one so far divided by this (10: 20 dB down)… */
  quietRatio: number;
  /** …or below this RMS level in any case (line noise). */
  quietFloor: number;
}

export const PAUSE_CUTTER_DEFAULTS: Omit<PauseCutterOptions, 'sampleRate'> = {
  pauseMs: 300,
  quietRatio: 10,
  quietFloor: 100,
};

/** Reads pushed audio chunk by chunk (20 ms frames in a call), counting speech and quiet. */
export class PauseCutter {
  private readonly o: PauseCutterOptions;
  private loudest = 0;
  private quietMs = 0;
  private sinceCut = 0;
  private sincePause = 0;
  private spoken = 0;

  constructor(options: Partial<PauseCutterOptions> & { sampleRate: number }) {
    this.o = { ...PAUSE_CUTTER_DEFAULTS, ...options };
  }

  /**
   * Takes the next chunk and its RMS level; true when the audio so far, this chunk included,
   * ends in a pause that follows speech: once per pause, however long it lasts.
   */
  push(samples: number, level: number): boolean {
    const ms = (samples * 1000) / this.o.sampleRate;
    this.loudest = Math.max(this.loudest, level);
    const quiet = level < Math.max(this.loudest / this.o.quietRatio, this.o.quietFloor);
    if (!quiet) {
      this.sinceCut += ms;
      this.sincePause += ms;
      this.spoken += ms;
      this.quietMs = 0;
      return false;
    }
    this.quietMs += ms;
    if (this.quietMs < this.o.pauseMs || this.sincePause === 0) return false;
    this.sincePause = 0;
    return true;
  }

  /** Quiet (ms) at the end of the audio so far. */
  get quietMsNow(): number {
    return this.quietMs;
  }

  /** Speech (ms) since reset(). */
  get speechMs(): number {
    return this.spoken;
  }

  /** Speech (ms) since the last cut(): how long a piece cut now would be. */
  get speechSinceCut(): number {
    return this.sinceCut;
  }

  /** The audio so far has been cut off as a piece of its own. */
  cut(): void {
    this.sinceCut = 0;
  }

  /** A new utterance: nothing heard yet. */
  reset(): void {
    this.loudest = 0;
    this.quietMs = 0;
    this.sinceCut = 0;
    this.sincePause = 0;
    this.spoken = 0;
  }
}
