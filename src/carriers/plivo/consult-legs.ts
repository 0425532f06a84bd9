// The CallUUID of each warm transfer's second leg, by the request_uuid its create answered. Plivo's call
// create names only the request (dialer.ts); the leg's own CallUUID, which the Transfer API takes for the
// bridge, first comes with its answer URL request (voice-webhook.ts, RequestUUID beside it). That request
// names the call_id, so the http room sends it to the node running the call, where the bridge reads it.
export class PlivoConsultLegs {
  private readonly legs = new Map<string, string>();

  /** The leg placed as request `requestUuid` was answered as call `callUuid`. */
  answered(requestUuid: string, callUuid: string): void {
    this.legs.set(requestUuid, callUuid);
  }

  /** The answered leg's CallUUID, no longer kept (the bridge takes it once). */
  take(requestUuid: string): string | undefined {
    const callUuid = this.legs.get(requestUuid);
    this.legs.delete(requestUuid);
    return callUuid;
  }

  /** The leg is over (it hung up, or was never answered): nothing to keep. */
  forget(requestUuid: string): void {
    this.legs.delete(requestUuid);
  }
}
