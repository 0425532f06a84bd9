// Node leases on SQLite: one row per service process sharing the database, under the epoch
// (fencing token) it took the lease with (records/nodes.ts).
import type { Db } from './database.ts';

export class SqliteNodeLeases {
  constructor(private readonly db: Db) {}

  acquire(nodeId: string, epoch: string, now: number, until: number, url: string | null): void {
    this.db
      .prepare(
        'INSERT INTO service_nodes (node_id, epoch, lease_until, renewed_at, url) VALUES (?, ?, ?, ?, ?) ON CONFLICT (node_id) DO UPDATE SET epoch = excluded.epoch, lease_until = excluded.lease_until, renewed_at = excluded.renewed_at, url = excluded.url',
      )
      .run(nodeId, epoch, until, now, url);
  }

  renew(nodeId: string, epoch: string, now: number, until: number, url: string | null): boolean {
    // An update, never an insert: a lease taken over stays gone.
    return (
      this.db
        .prepare('UPDATE service_nodes SET lease_until = ?, renewed_at = ?, url = ? WHERE node_id = ? AND epoch = ?')
        .run(until, now, url, nodeId, epoch).changes === 1
    );
  }

  release(nodeId: string, epoch: string): void {
    this.db.prepare('DELETE FROM service_nodes WHERE node_id = ? AND epoch = ?').run(nodeId, epoch);
  }

  alive(now: number): string[] {
    return (
      this.db.prepare('SELECT node_id FROM service_nodes WHERE lease_until >= ?').all(now) as { node_id: string }[]
    ).map((r) => r.node_id);
  }

  urlOf(nodeId: string, now: number): string | null {
    const row = this.db
      .prepare('SELECT url FROM service_nodes WHERE node_id = ? AND lease_until >= ?')
      .get(nodeId, now) as { url: string | null } | undefined;
    return row?.url ?? null;
  }

  forgetExpired(now: number): number {
    return this.db.prepare('DELETE FROM service_nodes WHERE lease_until < ?').run(now).changes;
  }
}
