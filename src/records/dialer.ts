// What the call service needs of a carrier to place an outbound call: carriers (Twilio, the
// simulated phones) are interchangeable adapters of this one interface.
import type { AgentVersion } from '../agents/schema.ts';
import type { DisconnectionReason } from './record.ts';

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

/**
 * No carrier can transfer this call: its line came in with no account to redirect it through (a Twilio stream where
 * neither the organization nor the service has API credentials). The call ends as a line without transfers does.
 */
export class NoTransferError extends Error {}

export type DialResult =
  | { status: 'dialing'; carrierCallId: string }
  | { status: 'failed'; reason: Extract<DisconnectionReason, 'dial_failed' | 'dial_no_answer'>; message: string };

export interface Dialer {
  readonly name: string;
  dial(request: DialRequest): Promise<DialResult>;
  /**
   * Whether a call to `to` reaches a real phone network, which shows the callee the caller id:
   * then call_from and presentation_number must be numbers the organization holds.
   */
  showsCallerId(to: string): boolean;
  /**
   * Refuses, before anything is written, a call from `from` this dialer serves but cannot place (a SIP trunk number
   * whose trunk has no outbound side): throws an ApiError naming the field. Absent when every number it serves can.
   */
  checkFrom?(orgId: string, from: string): Promise<void>;
  /**
   * Ends the carrier side of a call this dialer placed (after agent_hangup, say). A call that has
   * already ended is not an error. Absent when the carrier ends calls only by closing the stream.
   */
  hangUpCall?(callId: string): Promise<void>;
  /**
   * Cold transfer: moves the caller of a live call to `to`. Resolves once the carrier took it (the
   * agent's media stream then closes); how it went comes back as a carrier report. Absent when
   * the carrier cannot transfer.
   */
  transfer?(request: TransferRequest): Promise<void>;
  /**
   * Warm transfer, first step: calls `to` as a second leg of the call, whose media stream opens to
   * this service with call_id and `streamSecret`, as a placed call's does. Resolves with the leg's
   * carrier id once dialling; a leg that is not answered comes back as a carrier report.
   */
  consult?(request: ConsultRequest): Promise<{ carrierCallId: string }>;
  /** Warm transfer, last step: joins the caller and the second leg, and takes both off this service. */
  bridge?(request: { callId: string; carrierCallId: string; consultCarrierCallId: string }): Promise<void>;
  /**
   * Sends keypad tones (0-9, *, #, w for a half-second pause) down a live call, for menus on the far
   * side. Absent when the carrier cannot: neither of today's carriers can yet.
   */
  sendDigits?(request: { callId: string; carrierCallId: string; digits: string }): Promise<void>;
}

export interface ConsultRequest {
  callId: string;
  to: string;
  from: string | null;
  streamSecret: string;
}

export interface TransferRequest {
  callId: string;
  /** The carrier's id of the call (Twilio's CallSid). */
  carrierCallId: string;
  to: string;
  /** The caller id the destination sees. */
  from: string | null;
}
