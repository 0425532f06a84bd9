// The caller's recent audio, so the recogniser can be handed the onset of speech the VAD reported
// late (it runs behind the audio).

/**
 * The last `size` inbound frames with the audio time each ends at, copied into one preallocated
 * ring: frames held for 3 s would otherwise outlive young-generation GC by the thousand and churn
 * the old one. Frames of another length than `frameSamples` are kept by reference.
 */
export class FrameHistory {
  private readonly samples: Int16Array;
  private readonly lengths: Int32Array;
  private readonly others: (Int16Array | undefined)[];
  private readonly endAts: Float64Array;
  private start = 0;
  private count = 0;

  constructor(
    private readonly size: number,
    private readonly frameSamples: number,
  ) {
    this.samples = new Int16Array(size * frameSamples);
    this.lengths = new Int32Array(size);
    this.others = new Array<Int16Array | undefined>(size);
    this.endAts = new Float64Array(size);
  }

  push(frame: Int16Array, endAt: number): void {
    const at = (this.start + this.count) % this.size;
    if (frame.length === this.frameSamples) {
      this.samples.set(frame, at * this.frameSamples);
      this.others[at] = undefined;
    } else this.others[at] = frame;
    this.lengths[at] = frame.length;
    this.endAts[at] = endAt;
    if (this.count < this.size) this.count++;
    else this.start = (this.start + 1) % this.size;
  }

  /** Hands over, oldest first, the frames that end after `from` (as new arrays), and forgets them all. */
  drain(from: number, take: (frame: Int16Array) => void): void {
    for (let i = 0; i < this.count; i++) {
      const at = (this.start + i) % this.size;
      const other = this.others[at];
      this.others[at] = undefined;
      if (this.endAts[at]! <= from) continue;
      take(other ?? this.samples.slice(at * this.frameSamples, at * this.frameSamples + this.lengths[at]!));
    }
    this.start = 0;
    this.count = 0;
  }
}
