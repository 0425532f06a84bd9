// Placing an outbound call goes through a Dialer, so carriers are interchangeable adapters.
import type { AgentVersion } from '../agents/schema.ts';
import type { DisconnectionReason } from '../calls/record.ts';

export interface DialRequest {
  orgId: string;
  callId: string;
  from: string;
  to: string;
  presentationNumber: string | null;
  agent: AgentVersion;
  /** Presented back by the carrier as a stream parameter, with call_id, when the media stream opens. */
  streamSecret: string;
}

export type DialResult =
  | { status: 'dialing'; carrierCallId: string }
  | { status: 'failed'; reason: Extract<DisconnectionReason, 'dial_failed' | 'dial_no_answer'>; message: string };

export interface Dialer {
  readonly name: string;
  dial(request: DialRequest): Promise<DialResult>;
  /**
   * Ends the carrier side of a call this dialer placed (after agent_hangup, say). A call that has
   * already ended is not an error. Absent when the carrier ends calls only by closing the stream.
   */
  hangUpCall?(callId: string): Promise<void>;
}

/** What runs until a carrier is configured: the call ends at once, with a reason a person can act on. */
export class NoCarrierDialer implements Dialer {
  readonly name = 'none';

  async dial(): Promise<DialResult> {
    return {
      status: 'failed',
      reason: 'dial_failed',
      message: 'No carrier is configured for outbound calls, so the call was not placed. Configure a carrier (for example Twilio) and try again.',
    };
  }
}
