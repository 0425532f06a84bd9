// What a call needs of a speech-to-speech model's socket, whichever provider's protocol is under it
// (openai-realtime.ts, gemini-live.ts): the caller's audio in, our end of turn, the model's events out.
import type { RealtimeEvent } from './openai-realtime.ts';

export type { RealtimeEvent };

/** A function the model may call: one of the agent's tools. */
export interface SpeechFunction {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface SpeechToSpeechSocket {
  /** Why the socket is gone, once it is. */
  readonly failure: Error | null;
  /** Hears every server event until the returned function is called. */
  on(listener: (event: RealtimeEvent) => void): () => void;
  onClose(listener: (error: Error) => void): () => void;
  /** The caller's audio in the session's input format. */
  append(audio: Uint8Array): void;
  /**
   * With the model's own turn detection: whether it would report the caller starting to speak now (a `speech_started`
   * event). Absent: always (OpenAI's server VAD reports every start).
   */
  reportsCallerSpeech?(): boolean;
  /** The end of the caller's spoken turn (our end-of-turn policy decided it). */
  commit(): void;
  /** Asks for the model's next response; its events start with a `response_started`. */
  createResponse(): void;
  cancelResponse(): void;
  /**
   * The model's text answer to `instructions` about the conversation so far, out of band (nothing spoken, the
   * conversation unchanged); absent where the protocol has no such answer (Gemini Live: gemini-live.ts).
   */
  writeAside?(instructions: string): Promise<string>;
  /** The caller heard only `audioEndMs` of the model's audio item `itemId` (a no-op where the protocol cannot). */
  truncate(itemId: string, audioEndMs: number): void;
  /** The caller heard only `words` of the model's last reply (for a protocol that cannot truncate; else a no-op). */
  heardOnly(words: string): void;
  functionOutput(callId: string, output: string): void;
  /** Words the model did not hear as audio: a system note, the service's own lines, keyed digits. */
  addText(role: 'system' | 'assistant' | 'user', text: string): void;
  close(): void;
}
