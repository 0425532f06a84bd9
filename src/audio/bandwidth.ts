// Tells narrowband speech from wideband speech by how much of its energy lies above 4 kHz. A
// 16 kHz stream may carry telephone-band audio: a phone line bridged in, a Bluetooth headset in
// its hands-free mode, any 8 kHz recording upsampled. Such speech has (almost) nothing above the
// old Nyquist, while wideband speech keeps fricatives and breath up there; only loud frames are
// weighed, so a quiet line's wideband noise floor does not count as speech.
import { AudioError } from './errors.ts';

export type Bandwidth = 'narrow' | 'wide';

export const BANDWIDTH_PROBE_DEFAULTS = {
  /**
   * The high band starts here. An upsampled 8 kHz signal stops below 3.8 kHz; the filter's
   * transition band (~1.4 kHz wide) must end above that, so the edge sits at 4.6 kHz.
   */
  cutoffHz: 4600,
  /** Speech (loud 10 ms frames) weighed before a verdict. */
  speechMs: 300,
  /** Fewest speech ms for a verdict when asked early (an utterance ended first). */
  minSpeechMs: 100,
  /** Frames quieter than this RMS (16-bit) are not speech: about -50 dBFS. */
  speechRms: 100,
  /**
   * High band below this share of the energy, in dB, is narrowband speech. Measured over whole
   * utterances: upsampled telephone audio (flite voices through μ-law, asterisk's recorded
   * prompts) -80 to -86 dB; wideband flite voices -15 to -48 dB (awb the lowest).
   */
  narrowBelowDb: -60,
  /** Taps of the high-pass FIR (odd). */
  taps: 63,
} as const;

export type BandwidthProbeOptions = { [K in keyof typeof BANDWIDTH_PROBE_DEFAULTS]?: number } & { sampleRate: number };

/** Windowed-sinc (Blackman) high-pass: a spectral inversion of the low-pass at `cutoffHz`. */
function highPass(taps: number, cutoff: number): Float64Array {
  const h = new Float64Array(taps);
  const mid = (taps - 1) / 2;
  let sum = 0;
  for (let i = 0; i < taps; i++) {
    const n = i - mid;
    const sinc = n === 0 ? 2 * cutoff : Math.sin(2 * Math.PI * cutoff * n) / (Math.PI * n);
    const w = 0.42 - 0.5 * Math.cos((2 * Math.PI * i) / (taps - 1)) + 0.08 * Math.cos((4 * Math.PI * i) / (taps - 1));
    h[i] = sinc * w;
    sum += h[i]!;
  }
  for (let i = 0; i < taps; i++) h[i] = -h[i]! / sum;
  h[mid] = h[mid]! + 1;
  return h;
}

export class BandwidthProbe {
  private readonly taps: Float64Array;
  /** The last `taps` samples, written twice so the newest `taps` are always one contiguous run. */
  private readonly history: Float64Array;
  private at = 0;
  /** Samples seen, up to the filter's length: its output before then is the start-up transient. */
  private primed = 0;
  private readonly frameSamples: number;
  private readonly options: { [K in keyof typeof BANDWIDTH_PROBE_DEFAULTS]: number };
  private frameTotal = 0;
  private frameHigh = 0;
  private inFrame = 0;
  private total = 0;
  private high = 0;
  private speechFrames = 0;
  private decided: Bandwidth | null = null;

  constructor(options: BandwidthProbeOptions) {
    this.options = { ...BANDWIDTH_PROBE_DEFAULTS, ...options };
    if (!(this.options.cutoffHz > 0 && this.options.cutoffHz < options.sampleRate / 2)) {
      throw new AudioError(
        'AUDIO_BAD_ARGUMENT',
        `a ${this.options.cutoffHz} Hz band edge needs a rate above ${2 * this.options.cutoffHz} Hz, not ${options.sampleRate}`,
      );
    }
    if (this.options.taps % 2 !== 1)
      throw new AudioError('AUDIO_BAD_ARGUMENT', `the high-pass needs an odd number of taps, not ${this.options.taps}`);
    this.taps = highPass(this.options.taps, this.options.cutoffHz / options.sampleRate);
    this.history = new Float64Array(this.options.taps * 2);
    this.frameSamples = Math.round(options.sampleRate / 100);
  }

  /** The verdict once enough speech was heard, else null. */
  get verdict(): Bandwidth | null {
    return this.decided;
  }

  /** Speech weighed so far, ms. */
  get speechMs(): number {
    return this.speechFrames * 10;
  }

  /** Weighs more audio; returns the verdict once there is one (it never changes after). */
  push(samples: Int16Array): Bandwidth | null {
    if (this.decided) return this.decided;
    const taps = this.taps;
    const history = this.history;
    const n = taps.length;
    for (let i = 0; i < samples.length; i++) {
      const x = samples[i]!;
      history[this.at] = x;
      history[this.at + n] = x;
      this.at = this.at + 1 === n ? 0 : this.at + 1;
      // Audio that starts mid-word would ring the filter as if it held a click: weigh from the second window on.
      if (this.primed < n) {
        this.primed++;
        continue;
      }
      // history[at .. at + n) holds the last n samples, oldest first; the taps are symmetric.
      let y = 0;
      for (let k = 0, j = this.at; k < n; k++, j++) y += taps[k]! * history[j]!;
      // The filter's delay shifts the high band by half its length: immaterial over 10 ms frames.
      this.frameTotal += x * x;
      this.frameHigh += y * y;
      if (++this.inFrame === this.frameSamples) this.endFrame();
    }
    if (this.speechMs >= this.options.speechMs) this.decide();
    return this.decided;
  }

  /** A verdict now if at least `minSpeechMs` of speech was heard (an utterance ended early). */
  settle(): Bandwidth | null {
    if (!this.decided && this.speechMs >= this.options.minSpeechMs) this.decide();
    return this.decided;
  }

  /** High-band share of the speech energy so far, dB (-Infinity when silent). */
  get highBandDb(): number {
    return this.total > 0 ? 10 * Math.log10(this.high / this.total) : -Infinity;
  }

  private endFrame(): void {
    if (Math.sqrt(this.frameTotal / this.frameSamples) >= this.options.speechRms) {
      this.total += this.frameTotal;
      this.high += this.frameHigh;
      this.speechFrames++;
    }
    this.frameTotal = 0;
    this.frameHigh = 0;
    this.inFrame = 0;
  }

  private decide(): void {
    this.decided = this.highBandDb < this.options.narrowBelowDb ? 'narrow' : 'wide';
  }
}
