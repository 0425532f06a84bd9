// The calls under way in this process, by id (a session runs each). Other parts (carrier status
// callbacks, the scheduler, shutdown) reach a live call only through this, never its session
// internals. Organization slots are held in the store (limits.ts), across processes.
import type { CallRecord, DisconnectionReason } from '../records/record.ts';
import type { CallListener } from './listeners.ts';
import type { CallTransport } from './transport.ts';

export interface ActiveCall {
  readonly callId: string;
  readonly orgId: string;
  readonly callType: CallRecord['call_type'];
  /**
   * Ends the call as soon as possible with this reason (the session decides what is said first);
   * `now`: the line is cut at once, nothing more played (a peer may have finished the record already).
   */
  requestEnd(reason: DisconnectionReason, message?: string, options?: { now?: boolean }): void;
  /**
   * An answering machine picked up: leave the agent's voicemail_message if it has one, then end with voicemail_reached.
   */
  voicemailDetected(): void;
  /** The transfer's destination answered. */
  transferAnswered(): void;
  /**
   * The transfer did not connect (`why`); returns the secret for the caller's stream back, or null when the call is
   * over.
   */
  transferFailed(why: string): string | null;
  /**
   * A stream opened for this call while it is live: the caller back after a failed transfer, or a warm transfer's
   * second leg, if `secret` is the one made for it.
   */
  returnStream(secret: string, transport: CallTransport): boolean;
  /** A warm transfer's second leg did not connect (`why`). */
  consultFailed(why: string): void;
  /** The carrier ended the call (its status says completed). */
  carrierEnded(): void;
  /** Speaks a line given through the API (after what is being said, or at once with `interrupt`). */
  say(text: string, interrupt: boolean): void;
  /** Adds a note the model sees from its next turn. */
  addContext(content: string): void;
  /** Hears the call until it ends (events and mixed audio); returns how to stop. */
  listen(listener: CallListener): () => void;
  /** Resolves once the record is finalized. */
  readonly finished: Promise<void>;
}

export class CallRegistry {
  private readonly calls = new Map<string, ActiveCall>();
  /** A call under way. */
  add(call: ActiveCall): void {
    this.calls.set(call.callId, call);
    void call.finished.finally(() => {
      if (this.calls.get(call.callId) === call) this.calls.delete(call.callId);
    });
  }

  get(callId: string): ActiveCall | undefined {
    return this.calls.get(callId);
  }

  /** Calls under way (shutdown drains these). */
  get size(): number {
    return this.calls.size;
  }

  /** Calls under way. */
  all(): ActiveCall[] {
    return [...this.calls.values()];
  }
}
