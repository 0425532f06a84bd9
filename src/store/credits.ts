// Organization credit balances: set from ORG_LIMITS, debited by each call's cost.
import type { Db } from './database.ts';

export class SqliteCreditRepository {
  constructor(private readonly db: Db) {}

  initialize(orgId: string, balance: number, at: number): void {
    this.db
      .prepare('INSERT INTO org_credits (org_id, balance, updated_at) VALUES (?, ?, ?) ON CONFLICT (org_id) DO NOTHING')
      .run(orgId, balance, at);
  }

  balance(orgId: string): number | undefined {
    const row = this.db.prepare('SELECT balance FROM org_credits WHERE org_id = ?').get(orgId) as
      { balance: number } | undefined;
    return row?.balance;
  }

  debit(orgId: string, credits: number, at: number): void {
    this.db
      .prepare('UPDATE org_credits SET balance = balance - ?, updated_at = ? WHERE org_id = ?')
      .run(credits, at, orgId);
  }
}
