// The shapes the model client speaks: chat-completions messages and the events a reply yields.

export interface ToolCallRef {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCallRef[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/** What the model sees of one tool. */
export interface ChatTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

/** The `metadata` object sent with every model request, so a customer server knows the call. */
export interface LlmRequestMetadata {
  call_id: string;
  agent_id: string;
  agent_version: number;
  call_type: string;
  call_from: string | null;
  call_to: string | null;
  metadata: Record<string, unknown>;
  dynamic_variables: Record<string, string>;
}

export interface ChatRequest {
  messages: ChatMessage[];
  tools?: ChatTool[];
  tool_choice?: ToolChoice;
  metadata: LlmRequestMetadata;
}

/** One complete tool call the model asked for. */
export interface ToolCallRequest {
  id: string;
  name: string;
  /** The JSON text the model produced, unparsed. */
  arguments: string;
}

export interface LlmUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** Time marks of one model request, from the injected clock (ms). */
export interface LlmTiming {
  /** When the attempt that produced the reply was sent. */
  requestSentAt: number;
  /** When the first token or tool-call fragment arrived; null if none came. */
  firstTokenAt: number | null;
  endedAt: number;
  /** 1 when the first try worked. */
  attempts: number;
}

export type LlmEvent =
  | { type: 'token'; text: string }
  | { type: 'tool_calls'; calls: ToolCallRequest[] }
  | { type: 'done'; finishReason: string | null; usage: LlmUsage | null; timing: LlmTiming };
