// Call records in PostgreSQL: the same columns and JSON record as the SQLite store. A record's
// read-modify-write locks its row; an organization's slots are counted and taken under a lock of
// that organization, so two nodes never both take its last one.
import type { CallRecord, TranscriptItem, TranscriptMessage } from '../../records/record.ts';
import type { CallListQuery, CallPage, CallRepository } from '../../records/repository.ts';
import {
  callListPage,
  columnsOf,
  HOLDS_COUNTED_SLOT_SQL,
  OWNED_SQL,
  SET_OWNER_SQL,
  SLOTS_IN_USE_SQL,
  storedRecord,
  type UpdateOptions,
} from '../calls.ts';
import { keysetPageAsync } from '../paging.ts';
import { lockFor, type PgDb, type Queryable } from './db.ts';

type StoreOptions = { streamSecretHash?: string; ownerNode?: string };

/** The columns a record is mirrored into (the JSON record last), in the order columnValues gives them. */
const RECORD_COLUMNS = [
  'agent_id',
  'call_type',
  'call_status',
  'call_from',
  'call_to',
  'disconnection_reason',
  'user_sentiment',
  'start_timestamp',
  'duration_ms',
  'campaign_id',
  'batch_id',
  'record',
] as const;
const columnValues = (record: CallRecord) => {
  const columns = columnsOf(record);
  return RECORD_COLUMNS.map((column) => columns[column]);
};

export class PgCallRepository implements CallRepository {
  /** Per call, this process's writes one after another: a later transcript never lands before an earlier one. */
  private readonly writes = new Map<string, Promise<unknown>>();

  constructor(
    private readonly db: PgDb,
    /** Runs inside the transaction of each change (the webhook outbox writes there). */
    private readonly onChange: (tx: Queryable, orgId: string, before: CallRecord, after: CallRecord) => Promise<void>,
  ) {}

  insert(orgId: string, record: CallRecord, createdAt: number, options: StoreOptions = {}): Promise<void> {
    return this.insertOn(this.db, orgId, record, createdAt, options, false);
  }

  private async insertOn(
    q: Queryable,
    orgId: string,
    record: CallRecord,
    createdAt: number,
    options: StoreOptions,
    holdsSlot: boolean,
  ): Promise<void> {
    await q.run(
      `INSERT INTO calls (call_id, org_id, created_at, sort_ts, ${RECORD_COLUMNS.join(', ')}, stream_secret_hash, owner_node, holds_slot, owner_epoch)
       VALUES (${Array.from({ length: RECORD_COLUMNS.length + 7 }, () => '?').join(', ')}, (SELECT epoch FROM service_nodes WHERE node_id = ?))`,
      [
        record.call_id,
        orgId,
        createdAt,
        record.start_timestamp ?? createdAt,
        ...columnValues(record),
        options.streamSecretHash ?? null,
        options.ownerNode ?? null,
        holdsSlot,
        options.ownerNode ?? null,
      ],
    );
  }

  async insertHoldingSlot(
    orgId: string,
    record: CallRecord,
    createdAt: number,
    options: StoreOptions,
    max: number,
  ): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      await lockFor(tx, `slots:${orgId}`);
      if (max > 0 && (await this.slotsOn(tx, orgId)) >= max) return false;
      await this.insertOn(tx, orgId, record, createdAt, options, true);
      return true;
    });
  }

  async takeSlot(orgId: string, callId: string, max: number, owner?: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      await lockFor(tx, `slots:${orgId}`);
      if ((await tx.row(HOLDS_COUNTED_SLOT_SQL, [orgId, callId])) === undefined) {
        if (max > 0 && (await this.slotsOn(tx, orgId)) >= max) return false;
        if (
          (await tx.run('UPDATE calls SET holds_slot = TRUE WHERE org_id = ? AND call_id = ?', [orgId, callId])) !== 1
        )
          return false;
      }
      if (owner !== undefined) await tx.run(SET_OWNER_SQL, [owner, owner, callId]);
      return true;
    });
  }

  slotsInUse(orgId: string): Promise<number> {
    return this.slotsOn(this.db, orgId);
  }

  private async slotsOn(q: Queryable, orgId: string): Promise<number> {
    return (await q.row<{ n: number }>(SLOTS_IN_USE_SQL, [orgId]))?.n ?? 0;
  }

  async holdsSlot(orgId: string, callId: string): Promise<boolean> {
    return (
      (await this.db.row('SELECT 1 FROM calls WHERE org_id = ? AND call_id = ? AND holds_slot', [orgId, callId])) !==
      undefined
    );
  }

  async ownerOf(callId: string): Promise<string | null> {
    return (
      (await this.db.row<{ owner_node: string | null }>('SELECT owner_node FROM calls WHERE call_id = ?', [callId]))
        ?.owner_node ?? null
    );
  }

  async getForStream(
    callId: string,
  ): Promise<{ orgId: string; record: CallRecord; streamSecretHash: string | null } | undefined> {
    const row = await this.db.row<{ org_id: string; record: string; stream_secret_hash: string | null }>(
      'SELECT org_id, record, stream_secret_hash FROM calls WHERE call_id = ?',
      [callId],
    );
    return row
      ? { orgId: row.org_id, record: storedRecord(row.record), streamSecretHash: row.stream_secret_hash }
      : undefined;
  }

  async get(orgId: string, callId: string): Promise<CallRecord | undefined> {
    const row = await this.db.row<{ record: string }>('SELECT record FROM calls WHERE org_id = ? AND call_id = ?', [
      orgId,
      callId,
    ]);
    return row ? storedRecord(row.record) : undefined;
  }

  update(
    orgId: string,
    callId: string,
    change: (current: CallRecord) => CallRecord,
    options: UpdateOptions = {},
  ): Promise<CallRecord | undefined> {
    const previous = this.writes.get(callId) ?? Promise.resolve();
    const next = previous.then(
      () => this.updateNow(orgId, callId, change, options),
      () => this.updateNow(orgId, callId, change, options),
    );
    this.writes.set(callId, next);
    const forget = () => {
      if (this.writes.get(callId) === next) this.writes.delete(callId);
    };
    next.then(forget, forget);
    return next;
  }

  async keepTranscript(
    orgId: string,
    callId: string,
    transcript: readonly TranscriptMessage[],
    items: readonly TranscriptItem[],
  ): Promise<boolean> {
    let kept = false;
    await this.update(orgId, callId, (current) => {
      if (current.call_status !== 'ongoing') return current;
      kept = true;
      return { ...current, transcript: [...transcript], transcript_with_tool_calls: [...items] };
    });
    return kept;
  }

  private updateNow(
    orgId: string,
    callId: string,
    change: (current: CallRecord) => CallRecord,
    options: UpdateOptions,
  ): Promise<CallRecord | undefined> {
    return this.db.transaction(async (tx) => {
      const row = await tx.row<{ record: string; created_at: number }>(
        'SELECT record, created_at FROM calls WHERE org_id = ? AND call_id = ? FOR UPDATE',
        [orgId, callId],
      );
      if (!row) return undefined;
      const before = storedRecord(row.record);
      // The fencing rule (records/nodes.ts), under the row lock: an admission moving the call to another node
      // (takeSlot) waits, and a lease row found gone stays gone.
      if (options.takeover && (await tx.row<{ owned: boolean }>(OWNED_SQL, [orgId, callId]))?.owned) return before;
      const after = change(before);
      await tx.run(
        `UPDATE calls SET sort_ts = ?, ${RECORD_COLUMNS.map((column) => `${column} = ?`).join(', ')} WHERE org_id = ? AND call_id = ?`,
        [after.start_timestamp ?? row.created_at, ...columnValues(after), orgId, callId],
      );
      await this.onChange(tx, orgId, before, after);
      return after;
    });
  }

  async list(orgId: string, query: CallListQuery): Promise<CallPage> {
    const options = callListPage(orgId, query);
    const total = await this.db.row<{ n: number }>(
      `SELECT count(*) AS n FROM calls WHERE ${options.where}`,
      options.params,
    );
    const page = await keysetPageAsync({
      ...options,
      fetch: (where, all, order, limit) =>
        this.db.rows<{ call_id: string; sort_ts: number; record: string }>(
          `SELECT call_id, sort_ts, record FROM calls WHERE ${where} ${order} LIMIT ?`,
          [...all, limit],
        ),
    });
    return {
      calls: page.rows.map((r) => storedRecord(r.record)),
      nextCursor: page.nextCursor,
      totalCount: total?.n ?? 0,
    };
  }

  /** The record, and its webhook deliveries (their bodies hold the transcript), in one transaction. */
  delete(orgId: string, callId: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      await tx.run('DELETE FROM webhook_deliveries WHERE org_id = ? AND call_id = ?', [orgId, callId]);
      return (await tx.run('DELETE FROM calls WHERE org_id = ? AND call_id = ?', [orgId, callId])) === 1;
    });
  }

  async listOrphaned(statuses: string[], liveNodes: string[]): Promise<{ orgId: string; record: CallRecord }[]> {
    if (statuses.length === 0) return [];
    const rows = await this.db.rows<{ org_id: string; record: string }>(
      'SELECT org_id, record FROM calls WHERE call_status = ANY(?) AND (owner_node IS NULL OR NOT (owner_node = ANY(?)))',
      [statuses, liveNodes],
    );
    return rows.map((r) => ({ orgId: r.org_id, record: storedRecord(r.record) }));
  }
}
