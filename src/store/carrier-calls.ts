// The carrier's id of each outbound call (Twilio's CallSid), in SQLite.
import type { Db } from './database.ts';

export class SqliteCarrierCallRepository {
  constructor(private readonly db: Db) {}

  record(callId: string, carrier: string, carrierCallId: string, at: number, carrierAccountId?: string): void {
    this.db
      .prepare(
        'INSERT INTO carrier_calls (call_id, carrier, carrier_call_id, created_at, carrier_account_id) VALUES (?, ?, ?, ?, ?) ON CONFLICT (call_id) DO UPDATE SET carrier_call_id = excluded.carrier_call_id, carrier_account_id = excluded.carrier_account_id',
      )
      .run(callId, carrier, carrierCallId, at, carrierAccountId ?? null);
  }

  carrierAccountOf(callId: string): string | undefined {
    return (
      (
        this.db.prepare('SELECT carrier_account_id FROM carrier_calls WHERE call_id = ?').get(callId) as
          { carrier_account_id: string | null } | undefined
      )?.carrier_account_id ?? undefined
    );
  }

  carrierCallId(callId: string): string | undefined {
    return (
      this.db.prepare('SELECT carrier_call_id FROM carrier_calls WHERE call_id = ?').get(callId) as
        { carrier_call_id: string } | undefined
    )?.carrier_call_id;
  }

  callIdOf(carrier: string, carrierCallId: string): string | undefined {
    return (
      this.db
        .prepare('SELECT call_id FROM carrier_calls WHERE carrier = ? AND carrier_call_id = ?')
        .get(carrier, carrierCallId) as { call_id: string } | undefined
    )?.call_id;
  }
}
