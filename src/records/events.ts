// Call lifecycle notifications inside the process, for observers that must not slow the call:
// the campaign scheduler (a freed slot), metrics and traces, the carriers' bookkeeping of finished
// calls, stream deadlines and the agent-test runner listen; benches read each turn's latency
// parts. (Webhooks do not: their events are written with the record's change, in the store.)
import { EventEmitter } from 'node:events';
import type { CallRecord, FallbackReason, ProviderKind } from './record.ts';

/** One answered turn's latency parts in ms (null: not measured in that turn). */
export interface TurnLatency {
  turn: number;
  /** When the first agent audio went out (the call's clock, epoch ms). */
  at: number;
  /** Caller's speech end → first agent audio out. */
  e2e: number;
  asr: number | null;
  llm: number | null;
  llmSpeakable: number | null;
  tts: number | null;
}

export interface CallEventMap {
  /** The call connected (status ongoing). */
  started: [{ orgId: string; record: CallRecord }];
  /** The record was finalized: ended, not_connected or error. Emitted exactly once per call. */
  ended: [{ orgId: string; record: CallRecord }];
  /** A turn was answered: its latency parts (only measured while someone listens). */
  turn: [{ orgId: string; callId: string; parts: TurnLatency }];
  /** An HTTP tool's request was answered or failed: request → response in ms. */
  tool: [{ orgId: string; callId: string; name: string; ms: number; ok: boolean }];
  /** One of the agent's MCP servers could not be listed when the call started: its tools were left out. */
  mcp_unreachable: [{ orgId: string; callId: string }];
  /** A provider failed and the call moved to the next one of its kind (call/providers.ts). */
  fallback: [
    {
      orgId: string;
      callId: string;
      change: {
        kind: ProviderKind;
        from: string;
        to: string;
        fromPosition: number;
        toPosition: number;
        reason: FallbackReason;
      };
    },
  ];
}

export class CallEvents extends EventEmitter<CallEventMap> {}
