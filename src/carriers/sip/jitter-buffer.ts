// Caller audio back in sequence order. UDP may reorder, duplicate and lose packets; the session
// wants 20 ms frames in order (call/transport.ts). Packets in order pass straight through (no
// playout delay when the network behaves); a packet after a gap is held until the gap fills, or
// until the hold reaches its bound in packets or in time, when the missing frames are given up
// and concealed: the last frame again at half its level, then a quarter, then silence. The
// session's recogniser hears a short fade instead of a click or a hole in time.
//
// Every packet of the stream takes a sequence number, telephone events too: those are pushed
// with no frame, so the buffer counts them present and conceals nothing for them.
import { applyGain } from '../../audio/pcm.ts';
import type { TimerHandle, Timers } from '../../timers.ts';
import { sequenceDistance } from './rtp-packet.ts';

export const JITTER_DEFAULTS = {
  /** Packets held behind a gap at most (100 ms of 20 ms packets); one more and the gap is given up. */
  maxDepth: 5,
  /** The longest a packet waits behind a gap, so a stream that pauses after a loss still plays out. */
  maxWaitMs: 60,
  /** Frames concealed for one gap at most (200 ms); a longer loss is skipped, not filled. */
  maxConcealed: 10,
  /** A jump of more sequence numbers than this (either way) is the far side starting over. */
  restartDistance: 100,
} as const;

export interface JitterBufferOptions {
  timers: Timers;
  maxDepth?: number;
  maxWaitMs?: number;
  maxConcealed?: number;
  /** Samples of a concealed frame before any audio was heard (160: 20 ms at 8 kHz). */
  frameSamples?: number;
}

export interface JitterStats {
  /** Frames passed on as received. */
  played: number;
  /** Frames made up for packets that never came. */
  concealed: number;
  /** Packets that came after their place had been given up. */
  late: number;
  duplicate: number;
  /** Jumps in sequence large enough to start over. */
  restarts: number;
}

/** Fades of the consecutive concealed frames; past the last, silence. */
const FADES = [0.5, 0.25] as const;

export class JitterBuffer {
  private expected: number | null = null;
  private readonly held = new Map<number, Int16Array | null>();
  private last: Int16Array | null = null;
  /** Frames concealed since the last frame received. */
  private lost = 0;
  private timer: TimerHandle | undefined;
  private readonly maxDepth: number;
  private readonly maxWaitMs: number;
  private readonly maxConcealed: number;
  private readonly frameSamples: number;
  readonly stats: JitterStats = { played: 0, concealed: 0, late: 0, duplicate: 0, restarts: 0 };

  constructor(
    private readonly output: (frame: Int16Array, concealed: boolean) => void,
    private readonly options: JitterBufferOptions,
  ) {
    this.maxDepth = options.maxDepth ?? JITTER_DEFAULTS.maxDepth;
    this.maxWaitMs = options.maxWaitMs ?? JITTER_DEFAULTS.maxWaitMs;
    this.maxConcealed = options.maxConcealed ?? JITTER_DEFAULTS.maxConcealed;
    this.frameSamples = options.frameSamples ?? 160;
  }

  /** Packets waiting behind a gap. */
  get depth(): number {
    return this.held.size;
  }

  /** One packet: its decoded frame, or null for a packet that carries no audio (a telephone event). */
  push(sequence: number, frame: Int16Array | null): void {
    if (this.expected === null) this.expected = sequence;
    const distance = sequenceDistance(this.expected, sequence);
    if (Math.abs(distance) > JITTER_DEFAULTS.restartDistance) {
      this.stats.restarts++;
      this.release(false);
      this.expected = sequence;
    } else if (distance < 0) {
      this.stats.late++;
      return;
    }
    if (this.held.has(sequence)) {
      this.stats.duplicate++;
      return;
    }
    this.held.set(sequence, frame);
    this.drain();
    while (this.held.size > this.maxDepth) this.skipGap(true);
    this.armOrDisarm();
  }

  /** Plays out everything held, concealing the gaps between (the stream ended or paused). */
  flush(): void {
    this.release(true);
    this.armOrDisarm();
  }

  /** A new source: plays out what is held, then takes the next packet's sequence number as the start. */
  restart(): void {
    this.flush();
    this.expected = null;
  }

  close(): void {
    this.options.timers.clearTimeout(this.timer);
    this.timer = undefined;
    this.held.clear();
  }

  private release(conceal: boolean): void {
    while (this.held.size > 0) this.skipGap(conceal);
  }

  /** Plays the packets in order from the expected one. */
  private drain(): void {
    while (this.expected !== null && this.held.has(this.expected)) {
      const frame = this.held.get(this.expected)!;
      this.held.delete(this.expected);
      this.expected = (this.expected + 1) & 0xffff;
      if (frame) {
        this.last = frame;
        this.lost = 0;
        this.stats.played++;
        this.output(frame, false);
      }
    }
  }

  /** Gives up the gap before the earliest held packet (concealing it, up to the bound) and plays on. */
  private skipGap(conceal: boolean): void {
    if (this.expected === null || this.held.size === 0) return;
    let earliest = -1;
    let nearest = Infinity;
    for (const sequence of this.held.keys()) {
      const distance = sequenceDistance(this.expected, sequence);
      if (distance < nearest) {
        nearest = distance;
        earliest = sequence;
      }
    }
    if (conceal) for (let i = 0; i < Math.min(nearest, this.maxConcealed); i++) this.conceal();
    this.expected = earliest;
    this.drain();
  }

  private conceal(): void {
    const fade = FADES[this.lost];
    const frame =
      this.last && fade !== undefined
        ? applyGain(Int16Array.from(this.last), fade)
        : new Int16Array(this.last?.length ?? this.frameSamples);
    this.lost++;
    this.stats.concealed++;
    this.output(frame, true);
  }

  /** A wait runs while packets are held behind a gap; when it ends, the earliest gap is given up. */
  private armOrDisarm(): void {
    if (this.held.size === 0) {
      this.options.timers.clearTimeout(this.timer);
      this.timer = undefined;
      return;
    }
    this.timer ??= this.options.timers.setTimeout(() => {
      this.timer = undefined;
      this.skipGap(true);
      this.armOrDisarm();
    }, this.maxWaitMs);
  }
}
