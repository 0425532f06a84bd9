// The audio of the utterance under way, for engines that read a whole utterance at once
// (moonshine, an OpenAI-compatible endpoint): copies of the pushed frames, capped in length.
import { concatPcm } from '../../audio/pcm.ts';

export class UtteranceBuffer {
  private chunks: Int16Array[] = [];
  private buffered = 0;

  constructor(private readonly maxSamples: number) {}

  /**
   * Keeps a copy (the caller may reuse its frame); returns how many of the oldest samples were dropped to stay within
   * the cap.
   */
  push(samples: Int16Array): number {
    this.chunks.push(samples.slice());
    this.buffered += samples.length;
    let dropped = 0;
    while (this.buffered > this.maxSamples && this.chunks.length > 1) {
      const oldest = this.chunks.shift()?.length ?? 0;
      this.buffered -= oldest;
      dropped += oldest;
    }
    return dropped;
  }

  /** The whole utterance so far, left in the buffer. */
  peek(): Int16Array {
    return concatPcm(this.chunks);
  }

  /** The whole utterance, leaving the buffer empty. */
  take(): Int16Array {
    const all = concatPcm(this.chunks);
    this.clear();
    return all;
  }

  /** Drops the utterance; returns how many samples it held. */
  clear(): number {
    const held = this.buffered;
    this.chunks = [];
    this.buffered = 0;
    return held;
  }
}
