// Node leases on SQLite: one row per service process sharing the database.
import type { Db } from './database.ts';

export class SqliteNodeLeases {
  constructor(private readonly db: Db) {}

  renew(nodeId: string, now: number, until: number, url: string | null): void {
    this.db
      .prepare(
        'INSERT INTO service_nodes (node_id, lease_until, renewed_at, url) VALUES (?, ?, ?, ?) ON CONFLICT (node_id) DO UPDATE SET lease_until = excluded.lease_until, renewed_at = excluded.renewed_at, url = excluded.url',
      )
      .run(nodeId, until, now, url);
  }

  release(nodeId: string): void {
    this.db.prepare('DELETE FROM service_nodes WHERE node_id = ?').run(nodeId);
  }

  alive(now: number): string[] {
    return (this.db.prepare('SELECT node_id FROM service_nodes WHERE lease_until >= ?').all(now) as { node_id: string }[]).map((r) => r.node_id);
  }

  urlOf(nodeId: string, now: number): string | null {
    const row = this.db.prepare('SELECT url FROM service_nodes WHERE node_id = ? AND lease_until >= ?').get(nodeId, now) as { url: string | null } | undefined;
    return row?.url ?? null;
  }

  forgetExpired(now: number): number {
    return this.db.prepare('DELETE FROM service_nodes WHERE lease_until < ?').run(now).changes;
  }
}
