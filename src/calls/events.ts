// Call lifecycle notifications inside the process: the scheduler frees a campaign slot, the
// webhook outbox and analysis start, when a call reaches these states; benches read each turn's
// latency parts.
import { EventEmitter } from 'node:events';
import type { TurnLatency } from '../call/latency.ts';
import type { CallRecord } from './record.ts';

export interface CallEventMap {
  /** The call connected (status ongoing). */
  started: [{ orgId: string; record: CallRecord }];
  /** The record was finalized: ended, not_connected or error. Emitted exactly once per call. */
  ended: [{ orgId: string; record: CallRecord }];
  /** A turn was answered: its latency parts (only measured while someone listens). */
  turn: [{ orgId: string; callId: string; parts: TurnLatency }];
}

export class CallEvents extends EventEmitter<CallEventMap> {}
