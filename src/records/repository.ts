// Where call records are kept: the store implements this (SQLite now, PostgreSQL for several nodes).
import type { CallRecord, TranscriptItem, TranscriptMessage } from './record.ts';

export interface Range {
  lower_threshold?: number | undefined;
  upper_threshold?: number | undefined;
}

/** Every call-list filter key; arrays OR within a key, keys AND together. */
export interface CallFilter {
  agent_id?: string[] | undefined;
  call_type?: string[] | undefined;
  call_status?: string[] | undefined;
  disconnection_reason?: string[] | undefined;
  user_sentiment?: string[] | undefined;
  call_from?: string[] | undefined;
  call_to?: string[] | undefined;
  campaign_id?: string[] | undefined;
  batch_id?: string[] | undefined;
  start_timestamp?: Range | undefined;
  duration_ms?: Range | undefined;
}

export interface CallListQuery {
  filter: CallFilter;
  order: 'ascending' | 'descending';
  limit: number;
  paginationKey?: string | null | undefined;
}

export interface CallPage {
  calls: CallRecord[];
  nextCursor: string | null;
  totalCount: number;
}

export interface CallRepository {
  /**
   * `ownerNode`: the node that registers the call (nodes.ts) owns it until another serves it; the
   * epoch of that node's lease is recorded with it.
   */
  insert(
    orgId: string,
    record: CallRecord,
    createdAt: number,
    options?: { streamSecretHash?: string; ownerNode?: string },
  ): Promise<void>;
  /** The node that owns the call (registered or serves it); null for an unknown call or one from before owners. */
  ownerOf(callId: string): Promise<string | null>;
  /** A call looked up by id alone, for a media stream that carries only call_id and secret. */
  getForStream(
    callId: string,
  ): Promise<{ orgId: string; record: CallRecord; streamSecretHash: string | null } | undefined>;
  get(orgId: string, callId: string): Promise<CallRecord | undefined>;
  /**
   * Read-modify-write in one transaction; returns the stored result, or undefined for an unknown id.
   * Updates of one call asked for by this process apply in the order they were asked for.
   * `takeover`: another node finishes the call; while a lease of its owner's epoch exists (nodes.ts)
   * nothing is written and the record is returned as it stands — checked in the same transaction.
   */
  update(
    orgId: string,
    callId: string,
    change: (current: CallRecord) => CallRecord,
    options?: { takeover?: boolean },
  ): Promise<CallRecord | undefined>;
  /**
   * While the call is ongoing, its transcript so far (messages, and messages with tool items), so a
   * crash loses nothing said before it; nothing else of the record changes and no webhook event
   * follows. Kept in order with update(). False when the call is unknown or no longer ongoing.
   */
  keepTranscript(
    orgId: string,
    callId: string,
    transcript: readonly TranscriptMessage[],
    items: readonly TranscriptItem[],
  ): Promise<boolean>;
  list(orgId: string, query: CallListQuery): Promise<CallPage>;
  /** Removes a record for good; false for an unknown id. */
  delete(orgId: string, callId: string): Promise<boolean>;
  /**
   * In one transaction: the call takes one of its organization's slots unless `max` are held already
   * (max 0: no limit). Held slots are those of the organization's calls not yet final whose owner
   * still holds the lease they were written under (records/nodes.ts), or that have no owner. True
   * when the call holds a slot now (or held one that still counts). `owner`: the node that serves
   * the call from now on, whose it becomes under its current lease in the same transaction (a call
   * whose slot stopped counting when its old owner was taken for dead must find a free one again).
   */
  takeSlot(orgId: string, callId: string, max: number, owner?: string): Promise<boolean>;
  /** Slots the organization's calls hold now, counted as takeSlot counts them. */
  slotsInUse(orgId: string): Promise<number>;
  holdsSlot(orgId: string, callId: string): Promise<boolean>;
  /**
   * Writes the call holding one of its organization's slots, counted as takeSlot counts them, all in
   * one transaction; false (and nothing written) when `max` are held already.
   */
  insertHoldingSlot(
    orgId: string,
    record: CallRecord,
    createdAt: number,
    options: { streamSecretHash?: string; ownerNode?: string },
    max: number,
  ): Promise<boolean>;
  /**
   * Calls of every organization in the given statuses owned by none of `liveNodes` (recovery: their node died, or they
   * predate owners).
   */
  listOrphaned(statuses: string[], liveNodes: string[]): Promise<{ orgId: string; record: CallRecord }[]>;
}
