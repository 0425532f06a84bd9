// Where call records are kept: the store implements this (SQLite now, PostgreSQL for several nodes).
import type { CallRecord } from './record.ts';

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
  /** `ownerNode`: the node that registers the call (nodes.ts) owns it until another serves it. */
  insert(orgId: string, record: CallRecord, createdAt: number, options?: { streamSecretHash?: string; ownerNode?: string }): void;
  /** The node serving the call's media owns it from now on. */
  setOwner(callId: string, nodeId: string): void;
  /** The node that owns the call (registered or serves it); null for an unknown call or one from before owners. */
  ownerOf(callId: string): string | null;
  /** A call looked up by id alone, for a media stream that carries only call_id and secret. */
  getForStream(callId: string): { orgId: string; record: CallRecord; streamSecretHash: string | null } | undefined;
  get(orgId: string, callId: string): CallRecord | undefined;
  /** Read-modify-write in one transaction; returns the stored result, or undefined for an unknown id. */
  update(orgId: string, callId: string, change: (current: CallRecord) => CallRecord): CallRecord | undefined;
  list(orgId: string, query: CallListQuery): CallPage;
  /** Removes a record for good; false for an unknown id. */
  delete(orgId: string, callId: string): boolean;
  /**
   * In one transaction: the call takes one of its organization's slots unless `max` are held already
   * (max 0: no limit). Held slots are those of the organization's calls not yet final whose node is
   * one of `liveNodes` (or that have none). True when the call holds a slot now (or held one).
   */
  takeSlot(orgId: string, callId: string, max: number, liveNodes: string[]): boolean;
  /** Slots the organization's calls hold now, counted as takeSlot counts them. */
  slotsInUse(orgId: string, liveNodes: string[]): number;
  holdsSlot(orgId: string, callId: string): boolean;
  /** Runs `work` in one transaction that holds the store's write lock from its start; a throw undoes all of it. */
  atomically<T>(work: () => T): T;
  /** Calls of every organization in the given statuses owned by none of `liveNodes` (recovery: their node died, or they predate owners). */
  listOrphaned(statuses: string[], liveNodes: string[]): { orgId: string; record: CallRecord }[];
}
