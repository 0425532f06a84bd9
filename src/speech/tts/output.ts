// Engine PCM → what the caller asked for: resampled to its rate, cut into 20 ms chunks so that a
// cancel between chunks stops output within one frame, and, when asked, without the voice's silent
// lead-in (audio/lead-in.ts), so the first frame a caller hears already carries the voice.
import { Framer } from '../../audio/framer.ts';
import { FRAME_MS, samplesPerFrame } from '../../audio/pcm.ts';
import { LeadInTrimmer } from '../../audio/lead-in.ts';
import { Resampler } from '../../audio/resampler.ts';
import type { PcmChunk } from '../types.ts';

export class PcmOutput {
  readonly sampleRate: number;
  private resampler: Resampler | null = null;
  private readonly framer: Framer;
  /** Cuts the lead-in (audio/lead-in.ts) when asked to; null keeps the audio as the voice made it. */
  private readonly leadIn: LeadInTrimmer | null;

  constructor(sampleRate: number, options: { trimLeadIn?: boolean } = {}) {
    this.sampleRate = sampleRate;
    this.framer = new Framer(samplesPerFrame(sampleRate, FRAME_MS));
    this.leadIn = options.trimLeadIn ? new LeadInTrimmer(sampleRate, { first: true }) : null;
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
    if (this.leadIn) frames.push(...this.framer.push(this.leadIn.end()));
    const last = this.framer.flush();
    if (last) frames.push(last);
    return this.wrap(frames);
  }

  private pastLeadIn(samples: Int16Array): Int16Array {
    return this.leadIn ? this.leadIn.push(samples) : samples;
  }

  private wrap(frames: Int16Array[]): PcmChunk[] {
    return frames.map((samples) => ({ samples, sampleRate: this.sampleRate }));
  }
}
