// Call records in SQLite. Filterable fields are mirrored into columns (with indexes); the whole
// record is kept as JSON beside them.
import type { CallRecord, TranscriptItem, TranscriptMessage } from '../records/record.ts';
import type { CallFilter, CallListQuery, CallPage } from '../records/repository.ts';
import type { Db } from './database.ts';
import { keysetPage, ListWhere, queryFingerprint } from './paging.ts';

const LIST_COLUMNS = [
  'agent_id',
  'call_type',
  'call_status',
  'disconnection_reason',
  'user_sentiment',
  'call_from',
  'call_to',
  'campaign_id',
  'batch_id',
] as const;
const RANGE_COLUMNS = ['start_timestamp', 'duration_ms'] as const;

export function columnsOf(record: CallRecord) {
  return {
    agent_id: record.agent_id,
    call_type: record.call_type,
    call_status: record.call_status,
    call_from: record.call_from,
    call_to: record.call_to,
    disconnection_reason: record.disconnection_reason,
    user_sentiment: record.call_analysis?.user_sentiment ?? null,
    start_timestamp: record.start_timestamp,
    duration_ms: record.duration_ms,
    campaign_id: record.campaign_id,
    batch_id: record.batch_id,
    record: JSON.stringify(record),
  };
}

export interface UpdateOptions {
  /** Another node takes the call over: nothing changes while a lease of its owner's epoch exists. */
  takeover?: boolean;
}

/**
 * Whether a lease of the call's owner epoch exists (both stores; IS NOT DISTINCT FROM, as rows from
 * before epochs have none). Once that row is gone it never comes back: a node takes its lease again
 * only under a new epoch.
 */
const OWNER_LEASE_HELD = `EXISTS (SELECT 1 FROM service_nodes n
  WHERE n.node_id = c.owner_node AND n.epoch IS NOT DISTINCT FROM c.owner_epoch)`;
export const OWNED_SQL = `SELECT ${OWNER_LEASE_HELD} AS owned FROM calls c WHERE c.org_id = ? AND c.call_id = ?`;

/**
 * A call's slot counts (records/repository.ts) while the call is unowned or owned under a lease that
 * still exists. Matched by epoch, not only by node: a stalled node whose lease a peer took over takes
 * a new one, and its old calls must not count again beside the calls the peer admitted into their
 * slots meanwhile (20 of 16 in the two-node e2e).
 */
const SLOT_COUNTS = `c.holds_slot AND (c.owner_node IS NULL OR ${OWNER_LEASE_HELD})`;
export const SLOTS_IN_USE_SQL = `SELECT count(*) AS n FROM calls c
  WHERE c.org_id = ? AND c.call_status IN ('registered', 'ongoing') AND ${SLOT_COUNTS}`;
export const HOLDS_COUNTED_SLOT_SQL = `SELECT 1 AS held FROM calls c WHERE c.org_id = ? AND c.call_id = ? AND ${SLOT_COUNTS}`;
/** The call becomes the node's, under the lease it holds now. */
export const SET_OWNER_SQL =
  'UPDATE calls SET owner_node = ?, owner_epoch = (SELECT epoch FROM service_nodes WHERE node_id = ?) WHERE call_id = ?';

/** A stored record with the fields added since it was written at their defaults. */
export function storedRecord(json: string): CallRecord {
  return {
    llm_token_usage: null,
    transfer_destination: null,
    transfer_timestamp: null,
    ...(JSON.parse(json) as Omit<CallRecord, 'llm_token_usage' | 'transfer_destination' | 'transfer_timestamp'>),
  };
}

/** A page of a call list as both stores fetch it: the WHERE, the keyset and the cursor. */
export function callListPage(orgId: string, query: CallListQuery) {
  const where = callListWhere(orgId, query.filter);
  return {
    where: where.sql,
    params: where.params,
    order: query.order,
    sortColumn: 'sort_ts',
    idColumn: 'call_id',
    limit: query.limit,
    paginationKey: query.paginationKey,
    fingerprint: queryFingerprint(['calls', query.filter, query.order]),
    cursorOf: (row: { call_id: string; sort_ts: number }) => ({ sortKey: row.sort_ts, id: row.call_id }),
  };
}

/** The WHERE of a call list. */
function callListWhere(orgId: string, filter: CallFilter): ListWhere {
  const where = new ListWhere('org_id = ?', orgId);
  for (const column of LIST_COLUMNS) where.anyOf(column, filter[column]);
  // Agent-test calls (call_type api) are listed only when asked for: they are not the business's calls.
  if (filter.call_type === undefined) where.and("call_type != 'api'");
  for (const column of RANGE_COLUMNS) where.range(column, filter[column]);
  return where;
}

export class SqliteCallRepository {
  private readonly insertStmt;
  private readonly getStmt;
  private readonly updateStmt;
  private readonly streamStmt;
  private readonly transcriptStmt;
  private readonly ownedStmt;
  private readonly slotsStmt;

  /** `onChange` runs inside the transaction of each change (the webhook outbox writes there). */
  constructor(
    private readonly db: Db,
    private readonly onChange: (orgId: string, before: CallRecord, after: CallRecord) => void = () => undefined,
  ) {
    this.insertStmt = db.prepare(`
      INSERT INTO calls (call_id, org_id, created_at, sort_ts, agent_id, call_type, call_status, call_from, call_to,
        disconnection_reason, user_sentiment, start_timestamp, duration_ms, campaign_id, batch_id, record, stream_secret_hash, owner_node, owner_epoch)
      VALUES (@call_id, @org_id, @created_at, @sort_ts, @agent_id, @call_type, @call_status, @call_from, @call_to,
        @disconnection_reason, @user_sentiment, @start_timestamp, @duration_ms, @campaign_id, @batch_id, @record, @stream_secret_hash, @owner_node,
        (SELECT epoch FROM service_nodes WHERE node_id = @owner_node))`);
    this.getStmt = db.prepare('SELECT record, created_at FROM calls WHERE org_id = ? AND call_id = ?');
    this.streamStmt = db.prepare('SELECT org_id, record, stream_secret_hash FROM calls WHERE call_id = ?');
    this.updateStmt = db.prepare(`
      UPDATE calls SET sort_ts = @sort_ts, agent_id = @agent_id, call_type = @call_type, call_status = @call_status,
        call_from = @call_from, call_to = @call_to, disconnection_reason = @disconnection_reason,
        user_sentiment = @user_sentiment, start_timestamp = @start_timestamp, duration_ms = @duration_ms,
        campaign_id = @campaign_id, batch_id = @batch_id, record = @record
      WHERE org_id = @org_id AND call_id = @call_id`);
    // Only the two arrays are written: SQLite edits the stored JSON in place (numbers and the other
    // fields keep their text), a quarter to a half of reading, parsing and writing the whole record.
    this.transcriptStmt = db.prepare(`
      UPDATE calls SET record = json_set(record, '$.transcript', json(?), '$.transcript_with_tool_calls', json(?))
      WHERE org_id = ? AND call_id = ? AND call_status = 'ongoing'`);
    this.ownedStmt = db.prepare(OWNED_SQL);
    this.slotsStmt = db.prepare(SLOTS_IN_USE_SQL);
  }

  insert(
    orgId: string,
    record: CallRecord,
    createdAt: number,
    options: { streamSecretHash?: string; ownerNode?: string } = {},
  ): void {
    this.insertStmt.run({
      ...columnsOf(record),
      call_id: record.call_id,
      org_id: orgId,
      created_at: createdAt,
      sort_ts: record.start_timestamp ?? createdAt,
      stream_secret_hash: options.streamSecretHash ?? null,
      owner_node: options.ownerNode ?? null,
    });
  }

  takeSlot(orgId: string, callId: string, max: number, owner?: string): boolean {
    return this.db
      .transaction(() => {
        if (this.db.prepare(HOLDS_COUNTED_SLOT_SQL).get(orgId, callId) === undefined) {
          if (max > 0 && this.slotsInUse(orgId) >= max) return false;
          const taken = this.db
            .prepare('UPDATE calls SET holds_slot = 1 WHERE org_id = ? AND call_id = ?')
            .run(orgId, callId).changes;
          if (taken !== 1) return false;
        }
        if (owner !== undefined) this.db.prepare(SET_OWNER_SQL).run(owner, owner, callId);
        return true;
      })
      .immediate();
  }

  slotsInUse(orgId: string): number {
    return (this.slotsStmt.get(orgId) as { n: number }).n;
  }

  holdsSlot(orgId: string, callId: string): boolean {
    return (
      this.db.prepare('SELECT 1 FROM calls WHERE org_id = ? AND call_id = ? AND holds_slot = 1').get(orgId, callId) !==
      undefined
    );
  }

  insertHoldingSlot(
    orgId: string,
    record: CallRecord,
    createdAt: number,
    options: { streamSecretHash?: string; ownerNode?: string },
    max: number,
  ): boolean {
    // IMMEDIATE: the write lock is taken first, so no other process takes the slot between the count and the write.
    return this.db
      .transaction(() => {
        if (max > 0 && this.slotsInUse(orgId) >= max) return false;
        this.insert(orgId, record, createdAt, options);
        this.db.prepare('UPDATE calls SET holds_slot = 1 WHERE call_id = ?').run(record.call_id);
        return true;
      })
      .immediate();
  }

  ownerOf(callId: string): string | null {
    const row = this.db.prepare('SELECT owner_node FROM calls WHERE call_id = ?').get(callId) as
      { owner_node: string | null } | undefined;
    return row?.owner_node ?? null;
  }

  getForStream(callId: string): { orgId: string; record: CallRecord; streamSecretHash: string | null } | undefined {
    const row = this.streamStmt.get(callId) as
      { org_id: string; record: string; stream_secret_hash: string | null } | undefined;
    return row
      ? { orgId: row.org_id, record: storedRecord(row.record), streamSecretHash: row.stream_secret_hash }
      : undefined;
  }

  get(orgId: string, callId: string): CallRecord | undefined {
    const row = this.getStmt.get(orgId, callId) as { record: string } | undefined;
    return row ? storedRecord(row.record) : undefined;
  }

  update(
    orgId: string,
    callId: string,
    change: (current: CallRecord) => CallRecord,
    options: UpdateOptions = {},
  ): CallRecord | undefined {
    return this.db
      .transaction(() => {
        const row = this.getStmt.get(orgId, callId) as { record: string; created_at: number } | undefined;
        if (!row) return undefined;
        const before = storedRecord(row.record);
        // The fencing rule (records/nodes.ts): a live lease of the owner's epoch keeps the call its owner's.
        if (options.takeover && (this.ownedStmt.get(orgId, callId) as { owned: number }).owned === 1) return before;
        const next = change(before);
        this.updateStmt.run({
          ...columnsOf(next),
          call_id: callId,
          org_id: orgId,
          sort_ts: next.start_timestamp ?? row.created_at,
        });
        this.onChange(orgId, before, next);
        return next;
      })
      .immediate();
  }

  keepTranscript(
    orgId: string,
    callId: string,
    transcript: readonly TranscriptMessage[],
    items: readonly TranscriptItem[],
  ): boolean {
    return this.transcriptStmt.run(JSON.stringify(transcript), JSON.stringify(items), orgId, callId).changes === 1;
  }

  list(orgId: string, query: CallListQuery): CallPage {
    const options = callListPage(orgId, query);
    const totalCount = (
      this.db.prepare(`SELECT count(*) AS n FROM calls WHERE ${options.where}`).get(...options.params) as { n: number }
    ).n;
    const page = keysetPage({
      ...options,
      fetch: (where, all, order, limit) =>
        this.db
          .prepare(`SELECT call_id, sort_ts, record FROM calls WHERE ${where} ${order} LIMIT ?`)
          .all(...all, limit) as { call_id: string; sort_ts: number; record: string }[],
    });
    return { calls: page.rows.map((r) => storedRecord(r.record)), nextCursor: page.nextCursor, totalCount };
  }

  /** The record, and its webhook deliveries (their bodies hold the transcript), in one transaction. */
  delete(orgId: string, callId: string): boolean {
    return this.db
      .transaction(() => {
        this.db.prepare('DELETE FROM webhook_deliveries WHERE org_id = ? AND call_id = ?').run(orgId, callId);
        return this.db.prepare('DELETE FROM calls WHERE org_id = ? AND call_id = ?').run(orgId, callId).changes === 1;
      })
      .immediate();
  }

  listOrphaned(statuses: string[], liveNodes: string[]): { orgId: string; record: CallRecord }[] {
    if (statuses.length === 0) return [];
    const rows = this.db
      .prepare(
        `SELECT org_id, record FROM calls WHERE call_status IN (${statuses.map(() => '?').join(', ')})
         AND (owner_node IS NULL OR owner_node NOT IN (${liveNodes.map(() => '?').join(', ')}))`,
      )
      .all(...statuses, ...liveNodes) as { org_id: string; record: string }[];
    return rows.map((r) => ({ orgId: r.org_id, record: storedRecord(r.record) }));
  }
}
