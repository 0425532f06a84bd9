// Streaming rational resampler: a polyphase windowed-sinc (Kaiser) FIR. The low-pass cutoff sits
// below the lower of the two Nyquist rates, so downsampling removes what would alias and
// upsampling removes the images. Input history is carried across push() calls and every output
// sample is computed from the same taps whatever the chunking, so chunked output equals one-shot
// output sample for sample.
import { AudioError } from './errors.ts';

/** Design defaults in one place. */
export const RESAMPLER_DEFAULTS = {
  /** Zero crossings of the sinc on each side, counted at the lower rate: more = sharper edge. */
  zeroCrossings: 32,
  /** Kaiser window beta; 6.76 ≈ 70 dB stop band (Kaiser's formula 0.1102·(A−8.7)). */
  kaiserBeta: 6.76,
  /** Cutoff as a fraction of the lower rate: stop band starts at its Nyquist (0.5), pass band is flat to ~0.43. */
  cutoff: 0.466,
  /** Most polyphase branches allowed (e.g. 16 kHz → 44.1 kHz needs 441). */
  maxPhases: 2048,
} as const;

interface PolyphaseFilter {
  /** Upsampling factor (number of phases). */
  up: number;
  /** Downsampling factor. */
  down: number;
  /** Taps per phase. */
  taps: number;
  /** coefficients[phase * taps + k]. */
  coefficients: Float64Array;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  const half = x / 2;
  for (let k = 1; k < 50; k++) {
    term *= (half / k) * (half / k);
    sum += term;
    if (term < sum * 1e-12) break;
  }
  return sum;
}

// Filters depend only on the pair of rates, so all streams of one pair share one table.
const filterCache = new Map<string, PolyphaseFilter>();

function designFilter(inputRate: number, outputRate: number): PolyphaseFilter {
  const key = `${inputRate}:${outputRate}`;
  const cached = filterCache.get(key);
  if (cached) return cached;
  const g = gcd(inputRate, outputRate);
  const up = outputRate / g;
  const down = inputRate / g;
  if (up > RESAMPLER_DEFAULTS.maxPhases) {
    throw new AudioError(
      'AUDIO_UNSUPPORTED_RATE',
      `resampling ${inputRate} → ${outputRate} Hz needs ${up} phases (max ${RESAMPLER_DEFAULTS.maxPhases})`,
    );
  }
  const lowRate = Math.min(inputRate, outputRate);
  // Half-width of the filter in input samples; taps per phase is twice that.
  const halfWidth = Math.ceil((RESAMPLER_DEFAULTS.zeroCrossings * inputRate) / lowRate);
  const taps = 2 * halfWidth;
  // Cutoff in cycles per input sample.
  const fc = (RESAMPLER_DEFAULTS.cutoff * lowRate) / inputRate;
  const beta = RESAMPLER_DEFAULTS.kaiserBeta;
  const i0Beta = besselI0(beta);
  const coefficients = new Float64Array(up * taps);
  for (let phase = 0; phase < up; phase++) {
    let sum = 0;
    for (let k = 0; k < taps; k++) {
      // Distance (in input samples) from the output instant to input tap k.
      const tau = halfWidth - 1 - k + phase / up;
      const x = 2 * fc * tau;
      const sinc = x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
      const r = tau / halfWidth;
      const window = r * r >= 1 ? 0 : besselI0(beta * Math.sqrt(1 - r * r)) / i0Beta;
      const c = 2 * fc * sinc * window;
      coefficients[phase * taps + k] = c;
      sum += c;
    }
    // Unity DC gain on every phase, so a constant stays a constant.
    for (let k = 0; k < taps; k++) coefficients[phase * taps + k]! /= sum;
  }
  const filter = { up, down, taps, coefficients };
  filterCache.set(key, filter);
  return filter;
}

export class Resampler {
  readonly inputRate: number;
  readonly outputRate: number;
  private readonly filter: PolyphaseFilter | null;
  private buffer: Int16Array;
  private length = 0;
  /** Buffer index of the first input tap of the next output sample. */
  private start = 0;
  private phase = 0;
  private inputCount = 0;
  private outputCount = 0;

  constructor(inputRate: number, outputRate: number) {
    for (const rate of [inputRate, outputRate]) {
      if (!Number.isInteger(rate) || rate <= 0)
        throw new AudioError('AUDIO_UNSUPPORTED_RATE', `sample rate ${rate} is not a positive integer`);
    }
    this.inputRate = inputRate;
    this.outputRate = outputRate;
    this.filter = inputRate === outputRate ? null : designFilter(inputRate, outputRate);
    this.buffer = new Int16Array(this.filter ? this.filter.taps * 4 + 4096 : 0);
    this.reset();
  }

  /** Output samples are computed this many input samples after their instant (filter look-ahead). */
  get latencyInputSamples(): number {
    return this.filter ? this.filter.taps / 2 : 0;
  }

  reset(): void {
    this.buffer.fill(0);
    // Pre-roll of zeros stands for the audio before the stream started.
    this.length = this.filter ? this.filter.taps / 2 - 1 : 0;
    this.start = 0;
    this.phase = 0;
    this.inputCount = 0;
    this.outputCount = 0;
  }

  /**
   * Push input; returns the output samples that can be computed so far (a new array; the input itself when the rates
   * are equal).
   */
  push(input: Int16Array): Int16Array {
    this.inputCount += input.length;
    if (!this.filter) {
      this.outputCount += input.length;
      return input;
    }
    this.append(input);
    return this.drain();
  }

  /** End of stream: returns the remaining output, so the total is ceil(inputs · out/in). */
  flush(): Int16Array {
    if (!this.filter) return new Int16Array(0);
    const total = Math.ceil((this.inputCount * this.filter.up) / this.filter.down);
    this.append(new Int16Array(this.filter.taps));
    const tail = this.drain(total - this.outputCount);
    this.reset();
    return tail;
  }

  private append(input: Int16Array): void {
    if (this.length + input.length > this.buffer.length) {
      // Drop consumed history first; grow only if the live part does not fit.
      const live = this.length - this.start;
      if (live + input.length > this.buffer.length) {
        const grown = new Int16Array(Math.max(this.buffer.length * 2, live + input.length + 1024));
        grown.set(this.buffer.subarray(this.start, this.length));
        this.buffer = grown;
      } else {
        this.buffer.copyWithin(0, this.start, this.length);
      }
      this.length = live;
      this.start = 0;
    }
    this.buffer.set(input, this.length);
    this.length += input.length;
  }

  private drain(limit = Number.POSITIVE_INFINITY): Int16Array {
    const { up, down, taps, coefficients } = this.filter!;
    const spare = this.length - taps - this.start;
    // Outputs n with start + floor((phase + n·down)/up) + taps <= length.
    let count = spare < 0 ? 0 : Math.ceil(((spare + 1) * up - this.phase) / down);
    if (count > limit) count = Math.max(0, limit);
    const out = new Int16Array(count);
    const buffer = this.buffer;
    let start = this.start;
    let phase = this.phase;
    for (let n = 0; n < count; n++) {
      const base = phase * taps;
      let acc = 0;
      for (let k = 0; k < taps; k++) acc += buffer[start + k]! * coefficients[base + k]!;
      out[n] = acc > 32767 ? 32767 : acc < -32768 ? -32768 : Math.round(acc);
      phase += down;
      while (phase >= up) {
        phase -= up;
        start++;
      }
    }
    this.start = start;
    this.phase = phase;
    this.outputCount += count;
    return out;
  }
}

/** One-shot resampling of a whole signal (same samples as streaming it through a Resampler). */
export function resample(samples: Int16Array, inputRate: number, outputRate: number): Int16Array {
  if (inputRate === outputRate) return samples.slice();
  const resampler = new Resampler(inputRate, outputRate);
  const head = resampler.push(samples);
  const tail = resampler.flush();
  const out = new Int16Array(head.length + tail.length);
  out.set(head);
  out.set(tail, head.length);
  return out;
}
