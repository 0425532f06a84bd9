// Engine PCM → what the caller asked for: resampled to its rate, cut into 20 ms chunks so that a
// cancel between chunks stops output within one frame, and without the voice's silent lead-in, so
// the first frame a caller hears already carries the voice.
import { Framer } from '../../audio/framer.ts';
import { FRAME_MS, samplesPerFrame } from '../../audio/pcm.ts';
import { Resampler } from '../../audio/resampler.ts';
import type { PcmChunk } from '../types.ts';

export const LEAD_IN = {
  /**
   * A sample louder than this (−50 dBFS) is the voice. flite starts every sentence with 140–220 ms
   * under it (measured on slt, rms, awb and kal16), which the caller would hear as a later answer.
   */
  threshold: 100,
  /** Kept before the first loud sample, so a soft onset ("h", "f") is not clipped. */
  preRollMs: 10,
} as const;

export class PcmOutput {
  readonly sampleRate: number;
  private resampler: Resampler | null = null;
  private readonly framer: Framer;
  /** Still in the lead-in: audio is held back (at most the pre-roll) until the voice starts. */
  private leading: boolean;
  private held = new Int16Array(0);
  private readonly preRoll: number;

  constructor(sampleRate: number, options: { trimLeadIn?: boolean } = {}) {
    this.sampleRate = sampleRate;
    this.framer = new Framer(samplesPerFrame(sampleRate, FRAME_MS));
    this.leading = options.trimLeadIn ?? false;
    this.preRoll = Math.round((sampleRate * LEAD_IN.preRollMs) / 1000);
  }

  /** Engine audio at `sourceRate` in; whole 20 ms chunks at the output rate out. */
  push(samples: Int16Array, sourceRate: number): PcmChunk[] {
    if (!this.resampler || this.resampler.inputRate !== sourceRate) {
      // A new source rate (another voice) starts a fresh filter; the old tail is flushed first.
      const tail = this.resampler ? this.resampler.flush() : new Int16Array(0);
      this.resampler = new Resampler(sourceRate, this.sampleRate);
      if (tail.length > 0) this.framer.push(this.pastLeadIn(tail));
    }
    return this.wrap(this.framer.push(this.pastLeadIn(this.resampler.push(samples))));
  }

  /** End of the utterance: the rest, the last chunk padded with silence to a whole frame. */
  end(): PcmChunk[] {
    const frames = this.resampler ? this.framer.push(this.pastLeadIn(this.resampler.flush())) : [];
    // An utterance that never got loud still ends in a frame (its last pre-roll), not in nothing.
    if (this.leading && this.held.length > 0) frames.push(...this.framer.push(this.held));
    const last = this.framer.flush();
    if (last) frames.push(last);
    return this.wrap(frames);
  }

  /** The part of `samples` from the voice's start on (with its pre-roll); nothing while still quiet. */
  private pastLeadIn(samples: Int16Array): Int16Array {
    if (!this.leading) return samples;
    const onset = samples.findIndex((s) => s > LEAD_IN.threshold || s < -LEAD_IN.threshold);
    const joined = new Int16Array(this.held.length + samples.length);
    joined.set(this.held);
    joined.set(samples, this.held.length);
    if (onset === -1) {
      this.held = joined.slice(Math.max(0, joined.length - this.preRoll));
      return new Int16Array(0);
    }
    const heldBefore = this.held.length;
    this.leading = false;
    this.held = new Int16Array(0);
    return joined.subarray(Math.max(0, heldBefore + onset - this.preRoll));
  }

  private wrap(frames: Int16Array[]): PcmChunk[] {
    return frames.map((samples) => ({ samples, sampleRate: this.sampleRate }));
  }
}
