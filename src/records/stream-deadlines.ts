// A registered inbound or web call whose media stream never opens must not stay registered: it
// ends as not_connected once STREAM_CONNECT_TIMEOUT_MS has passed without a stream.
import type { Timers, TimerHandle } from '../timers.ts';
import type { CallEvents } from './events.ts';
import type { CallService } from './service.ts';

export class StreamDeadlines {
  private readonly deadlines = new Map<string, TimerHandle>();

  constructor(
    private readonly timers: Timers,
    private readonly calls: CallService,
    events: CallEvents,
    private readonly timeoutMs: number,
    /** A deadline whose call could not be ended (the store failed): recovery ends it later. */
    private readonly onError: (error: unknown, callId: string) => void = () => undefined,
  ) {
    events.on('started', ({ record }) => this.clear(record.call_id));
  }

  /** Starts waiting for this call's stream; the call ends with `reason` if it never comes. */
  await(orgId: string, callId: string, reason: 'dial_failed' | 'dial_no_answer', message: string): void {
    this.clear(callId);
    const handle = this.timers.setTimeout(() => {
      this.deadlines.delete(callId);
      void this.calls
        .endUnconnected(orgId, callId, 'not_connected', reason, message)
        .catch((error: unknown) => this.onError(error, callId));
    }, this.timeoutMs);
    this.deadlines.set(callId, handle);
  }

  /** No timer may touch the store once it is closed. */
  close(): void {
    for (const handle of this.deadlines.values()) this.timers.clearTimeout(handle);
    this.deadlines.clear();
  }

  private clear(callId: string): void {
    this.timers.clearTimeout(this.deadlines.get(callId));
    this.deadlines.delete(callId);
  }
}
