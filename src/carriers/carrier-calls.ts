// The carrier's own id of each outbound call (Twilio's CallSid), so a call can be hung up by
// call_id and a status callback found by CallSid; the store implements it.
export interface CarrierCallRepository {
  record(callId: string, carrier: string, carrierCallId: string, at: number): void;
  carrierCallId(callId: string): string | undefined;
  callIdOf(carrier: string, carrierCallId: string): string | undefined;
}
