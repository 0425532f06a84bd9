// Media sockets that have not yet said which call they belong to cost memory and a timer each and
// prove nothing: only so many may wait at once, so a flood of idle sockets cannot crowd out calls.

export const PENDING_STREAM_DEFAULTS = {
  /** Unidentified media sockets allowed at once across both transports (a real start takes milliseconds). */
  max: 256,
} as const;

export class PendingStreams {
  private waiting = 0;

  constructor(readonly max: number = PENDING_STREAM_DEFAULTS.max) {}

  get count(): number {
    return this.waiting;
  }

  /**
   * A slot for a new socket until it identifies itself or closes (the returned release, safe to call twice); undefined
   * when full.
   */
  admit(): (() => void) | undefined {
    if (this.waiting >= this.max) return undefined;
    this.waiting++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.waiting--;
    };
  }
}

/** What admission needs of a media socket. */
export interface WaitingSocket {
  close(code: number, reason: string): void;
  on(event: 'close', listener: () => void): unknown;
}

/**
 * Lets a new media socket wait for its start message, or closes it: 1013 while the service shuts
 * down or too many wait, 1008 when no start comes within `startTimeoutMs`. Returns what to call once
 * it has started (it then no longer counts as waiting); undefined when it was refused.
 */
export function admitMediaSocket(
  socket: WaitingSocket,
  pending: PendingStreams,
  o: { accepting: boolean; startTimeoutMs: number },
): (() => void) | undefined {
  if (!o.accepting) {
    socket.close(1013, 'shutting down');
    return undefined;
  }
  const release = pending.admit();
  if (!release) {
    socket.close(1013, 'too many streams waiting to start');
    return undefined;
  }
  const timer = setTimeout(() => socket.close(1008, 'no start message'), o.startTimeoutMs);
  const started = () => {
    clearTimeout(timer);
    release();
  };
  socket.on('close', started);
  return started;
}

/**
 * A media socket's messages around its start: while the start is checked (the store is asked)
 * later messages wait, in order; once the transport is there they go to it, the waiting first.
 */
export class StartQueue<M> {
  private held: M[] | undefined;
  private sink: ((message: M) => void) | undefined;

  /** The start arrived and is being checked: messages from now on wait for open(). */
  checking(): void {
    this.held ??= [];
  }

  /**
   * Passes a message on, or keeps it while the start is checked; false before any start (the caller reads it as one).
   */
  take(message: M): boolean {
    if (this.sink) this.sink(message);
    else if (this.held) this.held.push(message);
    else return false;
    return true;
  }

  /** The transport is ready: what waited goes to it in order, and so does every later message. */
  open(sink: (message: M) => void): void {
    const held = this.held ?? [];
    this.held = undefined;
    this.sink = sink;
    for (const message of held) sink(message);
  }
}
