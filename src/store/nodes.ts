// Node leases on SQLite: one row per service process sharing the database.
import type { NodeLeases } from '../calls/nodes.ts';
import type { Db } from './database.ts';

export class SqliteNodeLeases implements NodeLeases {
  constructor(private readonly db: Db) {}

  renew(nodeId: string, now: number, until: number): void {
    this.db
      .prepare('INSERT INTO service_nodes (node_id, lease_until, renewed_at) VALUES (?, ?, ?) ON CONFLICT (node_id) DO UPDATE SET lease_until = excluded.lease_until, renewed_at = excluded.renewed_at')
      .run(nodeId, until, now);
  }

  release(nodeId: string): void {
    this.db.prepare('DELETE FROM service_nodes WHERE node_id = ?').run(nodeId);
  }

  alive(now: number): string[] {
    return (this.db.prepare('SELECT node_id FROM service_nodes WHERE lease_until >= ?').all(now) as { node_id: string }[]).map((r) => r.node_id);
  }

  forgetExpired(now: number): number {
    return this.db.prepare('DELETE FROM service_nodes WHERE lease_until < ?').run(now).changes;
  }
}
