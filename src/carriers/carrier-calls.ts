// The carrier's own id of each outbound call (Twilio's CallSid), so a call can be hung up by
// call_id and a status callback found by CallSid; the store implements it.
export interface CarrierCallRepository {
  record(callId: string, carrier: string, carrierCallId: string, at: number): Promise<void>;
  carrierCallId(callId: string): Promise<string | undefined>;
  callIdOf(carrier: string, carrierCallId: string): Promise<string | undefined>;
}
