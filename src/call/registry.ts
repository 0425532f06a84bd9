// The calls running in this process, by id. Other parts (carrier status callbacks, the
// scheduler, shutdown) reach a live call only through this, never its session internals.
import type { DisconnectionReason } from '../calls/record.ts';

export interface ActiveCall {
  readonly callId: string;
  readonly orgId: string;
  /** Ends the call as soon as possible with this reason (the session decides what is said first). */
  requestEnd(reason: DisconnectionReason, message?: string): void;
  /** An answering machine picked up: leave the agent's voicemail_message if it has one, then end with voicemail_reached. */
  voicemailDetected(): void;
  /** Resolves once the record is finalized. */
  readonly finished: Promise<void>;
}

export class CallRegistry {
  private readonly calls = new Map<string, ActiveCall>();

  add(call: ActiveCall): void {
    this.calls.set(call.callId, call);
    void call.finished.finally(() => {
      if (this.calls.get(call.callId) === call) this.calls.delete(call.callId);
    });
  }

  get(callId: string): ActiveCall | undefined {
    return this.calls.get(callId);
  }

  countFor(orgId: string): number {
    let n = 0;
    for (const call of this.calls.values()) if (call.orgId === orgId) n++;
    return n;
  }

  get size(): number {
    return this.calls.size;
  }

  all(): ActiveCall[] {
    return [...this.calls.values()];
  }
}
