// Transcript items of tool use, exactly as docs/contract.md defines them (the invocation and
// its result). Times are seconds from the call's start, millisecond precision.

export interface ToolCallInvocationItem {
  role: 'tool_call_invocation';
  tool_call_id: string;
  name: string;
  /** The JSON text the model produced. */
  arguments: string;
  start_at: number;
  end_at: number;
}

export interface ToolCallResultItem {
  role: 'tool_call_result';
  tool_call_id: string;
  /** Response body text, cut at 16 KiB. */
  content: string;
  successful: boolean;
  start_at: number;
  end_at: number;
}

export type ToolTranscriptItem = ToolCallInvocationItem | ToolCallResultItem;

/** Rounds seconds to milliseconds, the precision of every transcript time. */
export function roundSeconds(s: number): number {
  return Math.round(s * 1000) / 1000;
}
