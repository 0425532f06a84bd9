// Agent audio leaves in real time, 20 ms a frame, never more than `leadMs` ahead of what the
// far side is playing: enough that its buffer never runs dry, little enough that a barge-in
// has almost nothing queued to clear.
import { FRAME_MS } from '../../audio/pcm.ts';
import type { CallTransport } from '../transport.ts';
import type { TimerHandle, Timers } from '../../timers.ts';

export const PACER_DEFAULTS = { leadMs: 80 } as const;

type Item = { kind: 'audio'; frame: Int16Array } | { kind: 'mark'; name: string };

/**
 * The wake-ups of every pacer on one event loop. Node runs timers only between batches of I/O,
 * and with a few hundred calls one batch of inbound frames can take longer than a frame: each
 * pacer due meanwhile would wait for the batch to end and then send its frames in a burst.
 * `runOverdue()`, called by the inbound media path after each message, sends what has fallen due
 * in the middle of such a batch; each pacer's own timer still covers a quiet loop.
 */
export class PacerWakeups {
  private readonly waiting = new Set<OutboundPacer>();
  /** No waiting pacer is due before this (a lower bound: a pacer that left may have set it). */
  private nextDue = Infinity;

  constructor(private readonly timers: Timers) {}

  /** Pacers waiting for a wake-up. */
  get size(): number {
    return this.waiting.size;
  }

  add(pacer: OutboundPacer): void {
    this.waiting.add(pacer);
    if (pacer.dueAt < this.nextDue) this.nextDue = pacer.dueAt;
  }

  remove(pacer: OutboundPacer): void {
    this.waiting.delete(pacer);
  }

  /** Wakes every pacer whose time has come; one clock read and a comparison when none has. */
  runOverdue(): void {
    if (this.waiting.size === 0) return;
    const now = this.timers.now();
    if (now < this.nextDue) return;
    let next = Infinity;
    // A woken pacer that waits again is re-added behind the cursor, so this loop sees it too.
    for (const pacer of this.waiting) {
      if (pacer.dueAt <= now) pacer.wake();
      else if (pacer.dueAt < next) next = pacer.dueAt;
    }
    this.nextDue = next;
  }
}

export interface PacerListener {
  /** A frame was handed to the transport; it starts playing at `playAt` (timers ms). */
  sent(frame: Int16Array, playAt: number): void;
  /** Everything queued has been sent. */
  drained(): void;
}

export class OutboundPacer {
  private readonly queue: Item[] = [];
  private head = 0;
  private timer: TimerHandle | undefined;
  /** When the far side will have played everything sent so far. */
  private playEnd = 0;
  private frames = 0;
  private readonly leadMs: number;
  private readonly wakeups: PacerWakeups | undefined;
  /** When the pending wake-up is due (timers ms); meaningful only while one is. */
  dueAt = 0;

  constructor(
    private readonly transport: CallTransport,
    private readonly timers: Timers,
    private readonly listener: PacerListener,
    options: { leadMs?: number; wakeups?: PacerWakeups | undefined } = {},
  ) {
    this.leadMs = options.leadMs ?? PACER_DEFAULTS.leadMs;
    this.wakeups = options.wakeups;
  }

  /** Frames sent since the call started. */
  get framesSent(): number {
    return this.frames;
  }

  /** Audio still waiting to be sent, in ms. */
  get queuedMs(): number {
    let n = 0;
    for (let i = this.head; i < this.queue.length; i++) if (this.queue[i]!.kind === 'audio') n++;
    return n * FRAME_MS;
  }

  /** When everything handed over so far will have played. */
  get playbackEndsAt(): number {
    return Math.max(this.playEnd, this.timers.now());
  }

  get idle(): boolean {
    return this.head === this.queue.length;
  }

  enqueue(frame: Int16Array): void {
    this.queue.push({ kind: 'audio', frame });
    this.kick();
  }

  enqueueMark(name: string): void {
    this.queue.push({ kind: 'mark', name });
    this.kick();
  }

  /**
   * Sends at once what the lead allows, unless a wake-up is already due: a 0 ms timer costs a loop turn (≥ 1 ms) per
   * reply.
   */
  private kick(): void {
    if (!this.timer) this.pump();
  }

  /** Drops everything not yet sent and tells the far side to drop what it buffered. */
  clear(): void {
    this.queue.length = 0;
    this.head = 0;
    this.cancelWake();
    this.playEnd = this.timers.now();
    this.transport.clear();
  }

  stop(): void {
    this.cancelWake();
    this.queue.length = 0;
    this.head = 0;
  }

  /** Runs the pending wake-up now (PacerWakeups calls this once it is due). */
  wake(): void {
    if (!this.timer) return;
    this.cancelWake();
    this.pump();
  }

  private cancelWake(): void {
    this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    this.wakeups?.remove(this);
  }

  private schedule(delay: number): void {
    if (this.timer) return;
    this.dueAt = this.timers.now() + delay;
    this.wakeups?.add(this);
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined;
      this.wakeups?.remove(this);
      this.pump();
    }, delay);
  }

  private pump(): void {
    const now = this.timers.now();
    if (this.playEnd < now) this.playEnd = now;
    while (this.head < this.queue.length) {
      const item = this.queue[this.head]!;
      if (item.kind === 'mark') {
        this.head++;
        this.transport.sendMark(item.name);
        continue;
      }
      if (this.playEnd - now >= this.leadMs) break;
      this.head++;
      const playAt = this.playEnd;
      this.playEnd += FRAME_MS;
      this.frames++;
      this.transport.sendAudio(item.frame);
      this.listener.sent(item.frame, playAt);
    }
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
      this.listener.drained();
      return;
    }
    // Wake when the lead has shrunk by one frame.
    this.schedule(Math.max(1, this.playEnd - this.leadMs - now + 1));
  }
}
