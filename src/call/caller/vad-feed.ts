// Hands inbound frames to the VAD in order, one at a time: its inference runs off the event loop,
// and its events carry their own audio-clock time, so the hot path only queues.
import type { VadEvent, VadStream } from '../../speech/types.ts';

export class VadFeed {
  private readonly queue: Int16Array[] = [];
  private busy = false;
  private stopped = false;

  constructor(
    private readonly vad: VadStream,
    private readonly onEvents: (events: VadEvent[]) => void,
    /** The VAD failed: nothing more is fed to it. */
    private readonly onFailure: (error: unknown) => void,
  ) {
    // Bound once: these are the callbacks of every push's promise.
    this.delivered = this.delivered.bind(this);
    this.failed = this.failed.bind(this);
  }

  push(frame: Int16Array): void {
    if (this.stopped) return;
    this.queue.push(frame);
    if (!this.busy) this.feed();
  }

  /** Drops what is queued and takes no more. */
  stop(): void {
    this.stopped = true;
    this.queue.length = 0;
  }

  /**
   * Plain callbacks, not an async function: this runs for every inbound frame, and an async
   * function's state per call was the largest allocation on the service's heap.
   */
  private feed(): void {
    for (let frame = this.queue.shift(); frame; frame = this.queue.shift()) {
      if (this.stopped) continue;
      this.busy = true;
      let result: Promise<VadEvent[]>;
      try {
        result = this.vad.push(frame);
      } catch (error) {
        this.failed(error);
        return;
      }
      result.then(this.delivered, this.failed);
      return;
    }
    this.busy = false;
  }

  private delivered(events: VadEvent[]): void {
    try {
      if (!this.stopped) this.onEvents(events);
    } catch (error) {
      this.failed(error);
      return;
    }
    this.feed();
  }

  private failed(error: unknown): void {
    this.busy = false;
    this.stop();
    this.onFailure(error);
  }
}
