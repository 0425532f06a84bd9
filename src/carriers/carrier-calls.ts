// The carrier's own id of each outbound call (Twilio's CallSid), so a call can be hung up by
// call_id and a status callback found by CallSid; the store implements it. A call that went through an
// organization's carrier account (carrier-accounts/) records that account, placed or answered: its
// callbacks are checked, and its hang-up and transfers sent, with that account's keys.
export interface CarrierCallRepository {
  record(callId: string, carrier: string, carrierCallId: string, at: number, carrierAccountId?: string): Promise<void>;
  carrierCallId(callId: string): Promise<string | undefined>;
  callIdOf(carrier: string, carrierCallId: string): Promise<string | undefined>;
  /** The carrier account the call went through; undefined for the service-wide account. */
  carrierAccountOf(callId: string): Promise<string | undefined>;
}
