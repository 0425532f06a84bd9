// Hands inbound frames to the VAD in order, one at a time: its inference runs off the event loop,
// and its events carry their own audio-clock time, so the hot path only queues. Each frame goes
// with a note of the caller's (its raw audio and time), handed back once the VAD has judged it, so
// whoever times things by the VAD's events hears the audio on the same clock.
import type { VadEvent, VadStream } from '../../speech/types.ts';

export class VadFeed<Note> {
  private readonly queue: Int16Array[] = [];
  private readonly notes: Note[] = [];
  /** The note of the frame the VAD is judging. */
  private judging: Note | undefined;
  private busy = false;
  private stopped = false;

  constructor(
    private readonly vad: VadStream,
    /** What the VAD found in one frame, with that frame's note. */
    private readonly onEvents: (events: VadEvent[], note: Note) => void,
    /** The VAD failed: nothing more is fed to it. */
    private readonly onFailure: (error: unknown) => void,
  ) {
    // Bound once: these are the callbacks of every push's promise.
    this.delivered = this.delivered.bind(this);
    this.failed = this.failed.bind(this);
  }

  push(frame: Int16Array, note: Note): void {
    if (this.stopped) return;
    this.queue.push(frame);
    this.notes.push(note);
    if (!this.busy) this.feed();
  }

  /** Drops what is queued and takes no more. */
  stop(): void {
    this.stopped = true;
    this.queue.length = 0;
    this.notes.length = 0;
    this.judging = undefined;
  }

  /**
   * Plain callbacks, not an async function: this runs for every inbound frame, and an async
   * function's state per call was the largest allocation on the service's heap.
   */
  private feed(): void {
    for (let frame = this.queue.shift(); frame; frame = this.queue.shift()) {
      const note = this.notes.shift() as Note;
      if (this.stopped) continue;
      this.busy = true;
      this.judging = note;
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
      if (!this.stopped) this.onEvents(events, this.judging as Note);
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
