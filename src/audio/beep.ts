// An answering machine's beep: one steady tone, 0.25-1.5 s long, somewhere between 300 Hz and
// 2.5 kHz. Found frame by frame as a spectral peak that holds nearly all the frame's energy and
// stays on one frequency; speech (harmonics, moving formants) and keypad tones (two peaks) never do.
import FFT from 'fft.js';
import { FRAME_MS } from './pcm.ts';

export const BEEP = {
  minMs: 250,
  maxMs: 1_500,
  minHz: 300,
  maxHz: 2_500,
  /** Share of the frame's energy within the peak's main lobe. */
  minPurity: 0.8,
  /** The peak may wander this far from where the tone began (a bin is ~31 Hz). */
  maxDriftHz: 60,
  /** Mean square below this (about −45 dBm0) is too quiet to be a beep. */
  minMeanSquare: 300,
} as const;

export interface Beep {
  /** Call-clock ms when the tone began and ended. */
  startMs: number;
  endMs: number;
  hz: number;
}

export class BeepDetector {
  private readonly frameSamples: number;
  private readonly fft: FFT;
  private readonly size: number;
  private readonly window: Float64Array;
  private readonly input: number[];
  private readonly spectrum: number[];
  /** The tone under way: its first frequency and start. */
  private tone: { hz: number; startMs: number } | null = null;

  constructor(private readonly rate: number) {
    this.frameSamples = (rate * FRAME_MS) / 1000;
    this.size = rate <= 8000 ? 256 : 512;
    this.fft = new FFT(this.size);
    this.window = new Float64Array(this.frameSamples);
    for (let i = 0; i < this.frameSamples; i++)
      this.window[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (this.frameSamples - 1));
    this.input = new Array<number>(this.size).fill(0);
    this.spectrum = this.fft.createComplexArray() as number[];
  }

  /** One 20 ms frame that began at `atMs`; returns a beep that ended with it, if one did. */
  push(frame: Int16Array, atMs: number): Beep | null {
    const hz = frame.length === this.frameSamples ? this.toneIn(frame) : null;
    const tone = this.tone;
    if (hz !== null && tone && Math.abs(hz - tone.hz) <= BEEP.maxDriftHz) return null;
    this.tone = hz === null ? null : { hz, startMs: atMs };
    if (!tone) return null;
    const ms = atMs - tone.startMs;
    return ms >= BEEP.minMs && ms <= BEEP.maxMs ? { startMs: tone.startMs, endMs: atMs, hz: tone.hz } : null;
  }

  /** The frequency of the one steady tone this frame holds, or null. */
  private toneIn(frame: Int16Array): number | null {
    let energy = 0;
    for (let i = 0; i < frame.length; i++) energy += frame[i]! * frame[i]!;
    if (energy / frame.length < BEEP.minMeanSquare) return null;
    for (let i = 0; i < this.frameSamples; i++) this.input[i] = frame[i]! * this.window[i]!;
    this.fft.realTransform(this.spectrum, this.input);
    const bins = this.size / 2;
    const power = (k: number) => this.spectrum[2 * k]! ** 2 + this.spectrum[2 * k + 1]! ** 2;
    let total = 0;
    let peak = 0;
    let peakPower = 0;
    for (let k = 1; k < bins; k++) {
      const p = power(k);
      total += p;
      if (p > peakPower) {
        peakPower = p;
        peak = k;
      }
    }
    const hz = (peak * this.rate) / this.size;
    if (total === 0 || hz < BEEP.minHz || hz > BEEP.maxHz) return null;
    // A Hann window spreads a tone over its bin and two either side (a frame is shorter than the FFT: a little wider).
    let lobe = 0;
    for (let k = Math.max(1, peak - 3); k <= Math.min(bins - 1, peak + 3); k++) lobe += power(k);
    return lobe / total >= BEEP.minPurity ? hz : null;
  }
}
