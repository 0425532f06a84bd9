// Engine PCM → what the caller asked for: resampled to its rate, cut into 20 ms chunks so that a
// cancel between chunks stops output within one frame.
import { Framer } from '../../audio/framer.ts';
import { FRAME_MS, samplesPerFrame } from '../../audio/pcm.ts';
import { Resampler } from '../../audio/resampler.ts';
import type { PcmChunk } from '../types.ts';

export class PcmOutput {
  readonly sampleRate: number;
  private resampler: Resampler | null = null;
  private readonly framer: Framer;

  constructor(sampleRate: number) {
    this.sampleRate = sampleRate;
    this.framer = new Framer(samplesPerFrame(sampleRate, FRAME_MS));
  }

  /** Engine audio at `sourceRate` in; whole 20 ms chunks at the output rate out. */
  push(samples: Int16Array, sourceRate: number): PcmChunk[] {
    if (!this.resampler || this.resampler.inputRate !== sourceRate) {
      // A new source rate (another voice) starts a fresh filter; the old tail is flushed first.
      const tail = this.resampler ? this.resampler.flush() : new Int16Array(0);
      this.resampler = new Resampler(sourceRate, this.sampleRate);
      if (tail.length > 0) this.framer.push(tail);
    }
    return this.wrap(this.framer.push(this.resampler.push(samples)));
  }

  /** End of the utterance: the rest, the last chunk padded with silence to a whole frame. */
  end(): PcmChunk[] {
    const frames = this.resampler ? this.framer.push(this.resampler.flush()) : [];
    const last = this.framer.flush();
    if (last) frames.push(last);
    return this.wrap(frames);
  }

  private wrap(frames: Int16Array[]): PcmChunk[] {
    return frames.map((samples) => ({ samples, sampleRate: this.sampleRate }));
  }
}
