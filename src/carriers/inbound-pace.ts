// Caller audio is held to the clock. A stream may run ahead of real time by a little (audio held
// up on the network arrives in a burst), never by more: what is further ahead is dropped, and a
// stream that keeps pushing is cut off. Nobody can fill a call's queues, recording and recogniser
// by sending a minute of audio in a second.

export const INBOUND_PACE_DEFAULTS = {
  /** How far ahead of the wall clock since the stream's first audio a stream may run. */
  aheadMs: 2000,
  /** Audio dropped for running ahead, in all, after which the stream is closed (1008). */
  closeAfterDroppedMs: 5000,
} as const;

export type PaceVerdict = 'accept' | 'drop' | 'close';

export class InboundPace {
  private startedAt: number | null = null;
  private acceptedSamples = 0;
  private droppedMs = 0;

  constructor(
    private readonly rate: number,
    /** Milliseconds, monotonic. */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Whether `samples` more of caller audio fit the clock. */
  admit(samples: number): PaceVerdict {
    const now = this.now();
    this.startedAt ??= now;
    const audioMs = ((this.acceptedSamples + samples) / this.rate) * 1000;
    if (audioMs <= now - this.startedAt + INBOUND_PACE_DEFAULTS.aheadMs) {
      this.acceptedSamples += samples;
      return 'accept';
    }
    this.droppedMs += (samples / this.rate) * 1000;
    return this.droppedMs > INBOUND_PACE_DEFAULTS.closeAfterDroppedMs ? 'close' : 'drop';
  }
}
