// Turns audio chunks of any size into frames of exactly `frameSamples` samples, keeping the
// remainder for the next push. Carriers and engines deliver odd sizes; the pipeline wants 20 ms.
import { AudioError } from './errors.ts';
import { FRAME_MS, INTERNAL_SAMPLE_RATE, samplesPerFrame } from './pcm.ts';

export class Framer {
  readonly frameSamples: number;
  private readonly pending: Int16Array;
  private pendingLength = 0;

  constructor(frameSamples: number = samplesPerFrame(INTERNAL_SAMPLE_RATE, FRAME_MS)) {
    if (!Number.isInteger(frameSamples) || frameSamples <= 0) {
      throw new AudioError('AUDIO_BAD_FRAME_SIZE', `frame size ${frameSamples} is not a positive integer`);
    }
    this.frameSamples = frameSamples;
    this.pending = new Int16Array(frameSamples);
  }

  /** Framer for `ms`-millisecond frames at `sampleRate` (default 20 ms). */
  static forRate(sampleRate: number, ms: number = FRAME_MS): Framer {
    return new Framer(samplesPerFrame(sampleRate, ms));
  }

  /** Samples held back waiting for a full frame. */
  get buffered(): number {
    return this.pendingLength;
  }

  /**
   * Push a chunk; returns the whole frames it completes, each the caller's own (the frames of one
   * push are views into one new buffer: one allocation per chunk, not per frame).
   */
  push(chunk: Int16Array): Int16Array[] {
    const frames: Int16Array[] = [];
    const size = this.frameSamples;
    const count = Math.floor((this.pendingLength + chunk.length) / size);
    const out = count > 0 ? new Int16Array(count * size) : this.pending;
    let offset = 0;
    if (this.pendingLength > 0) {
      const take = Math.min(size - this.pendingLength, chunk.length);
      this.pending.set(chunk.subarray(0, take), this.pendingLength);
      this.pendingLength += take;
      offset = take;
      if (this.pendingLength < size) return frames;
      out.set(this.pending);
      frames.push(out.subarray(0, size));
      this.pendingLength = 0;
    }
    while (chunk.length - offset >= size) {
      const at = frames.length * size;
      out.set(chunk.subarray(offset, offset + size), at);
      frames.push(out.subarray(at, at + size));
      offset += size;
    }
    if (offset < chunk.length) {
      this.pending.set(chunk.subarray(offset), 0);
      this.pendingLength = chunk.length - offset;
    }
    return frames;
  }

  /** End of stream: the last partial frame padded with silence, or null when nothing is held. */
  flush(): Int16Array | null {
    if (this.pendingLength === 0) return null;
    const frame = new Int16Array(this.frameSamples);
    frame.set(this.pending.subarray(0, this.pendingLength));
    this.pendingLength = 0;
    return frame;
  }

  reset(): void {
    this.pendingLength = 0;
  }
}
