// The calls of this process, by id: those under way (a session runs them) and those registered
// and waiting for their media stream that hold one of their organization's slots. Other parts
// (carrier status callbacks, the scheduler, shutdown) reach a live call only through this, never
// its session internals; the organization limits count both kinds.
import type { CallRecord, DisconnectionReason } from '../calls/record.ts';
import type { CallListener } from './listeners.ts';
import type { CallTransport } from './transport.ts';

export interface ActiveCall {
  readonly callId: string;
  readonly orgId: string;
  readonly callType: CallRecord['call_type'];
  /** Ends the call as soon as possible with this reason (the session decides what is said first). */
  requestEnd(reason: DisconnectionReason, message?: string): void;
  /** An answering machine picked up: leave the agent's voicemail_message if it has one, then end with voicemail_reached. */
  voicemailDetected(): void;
  /** The transfer's destination answered. */
  transferAnswered(): void;
  /** The transfer did not connect (`why`); returns the secret for the caller's stream back, or null when the call is over. */
  transferFailed(why: string): string | null;
  /** A stream opened for this call while it is live: the caller back after a failed transfer, or a warm transfer's second leg, if `secret` is the one made for it. */
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
  /** Registered calls holding a slot until they connect (add) or end without connecting (release): call_id → org. */
  private readonly waiting = new Map<string, string>();

  /** A call under way; it takes over the slot its registration held, if any. */
  add(call: ActiveCall): void {
    this.waiting.delete(call.callId);
    this.calls.set(call.callId, call);
    void call.finished.finally(() => {
      if (this.calls.get(call.callId) === call) this.calls.delete(call.callId);
    });
  }

  /** A registered call (ringing, or waiting for its stream) takes one of its organization's slots. */
  hold(orgId: string, callId: string): void {
    if (!this.calls.has(callId)) this.waiting.set(callId, orgId);
  }

  /** A registered call ended without connecting: its slot is free again. A call under way is not touched. */
  release(callId: string): void {
    this.waiting.delete(callId);
  }

  /** Whether the call already counts against its organization's limit (waiting or under way). */
  holdsSlot(callId: string): boolean {
    return this.waiting.has(callId) || this.calls.has(callId);
  }

  /** The registered calls of an organization that hold a slot while waiting for their stream. */
  waitingFor(orgId: string): string[] {
    return [...this.waiting].filter(([, org]) => org === orgId).map(([callId]) => callId);
  }

  get(callId: string): ActiveCall | undefined {
    return this.calls.get(callId);
  }

  /** Slots the organization uses: its calls under way and its registered calls waiting to connect. */
  countFor(orgId: string): number {
    let n = 0;
    for (const call of this.calls.values()) if (call.orgId === orgId) n++;
    for (const org of this.waiting.values()) if (org === orgId) n++;
    return n;
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
