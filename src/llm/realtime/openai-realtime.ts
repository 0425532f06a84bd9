// The OpenAI Realtime WebSocket protocol, as this service speaks it: one socket per call, JSON events
// both ways, audio base64 in them. What is relied on, from the provider's API reference (client and
// server events):
//
//   client → server
//     {"type":"session.update","session":{"type":"realtime","instructions":"…","output_modalities":["audio"],
//      "audio":{"input":{"format":{"type":"audio/pcmu"},"turn_detection":null},
//               "output":{"format":{"type":"audio/pcmu"},"voice":"marin"}},
//      "tools":[{"type":"function","name":"…","description":"…","parameters":{…}}],"tool_choice":"auto"}}
//       formats: {"type":"audio/pcmu"} (G.711 μ-law, 8 kHz) or {"type":"audio/pcm","rate":24000} (24 kHz only);
//       "To clear a field like turn_detection, pass null."
//       the model's own turn detection instead (llm.turn_detection "model"):
//       "turn_detection":{"type":"server_vad","create_response":true,"interrupt_response":true}
//       the server then commits the buffer itself when the caller stops and creates the response; on speech
//       it cancels a response under way. The client only appends (and still truncates what was not heard).
//     {"type":"input_audio_buffer.append","audio":"<base64>"}
//     {"type":"input_audio_buffer.commit"}
//     {"type":"response.create"}            {"type":"response.cancel"}
//     an out-of-band text answer for the service's own use (a warm transfer's summary):
//     {"type":"response.create","response":{"conversation":"none","output_modalities":["text"],
//      "instructions":"…","metadata":{"aside":"true"}}}
//       conversation: "Set this to none to create an out-of-band response which will not add items to default
//       conversation"; input absent: the response reads the default conversation ("Using this field creates a
//       new context for this Response instead of using the default conversation"); output_modalities ["text"]:
//       "Setting the output to mode text will disable audio output from the model". Its response.created and
//       response.done carry the metadata back (and conversation_id null), which tells them from the call's own;
//       its words are the output items' {"type":"output_text","text":"…"} in response.done.
//     {"type":"conversation.item.truncate","item_id":"…","content_index":0,"audio_end_ms":1500}
//       "If the audio_end_ms is greater than the actual audio duration, the server will respond with an error."
//     {"type":"conversation.item.create","item":{"type":"function_call_output","call_id":"…","output":"…"}}
//     {"type":"conversation.item.create",
//      "item":{"type":"message","role":"system","content":[{"type":"input_text","text":"…"}]}}
//
//   server → client
//     session.created / session.updated {"session":{…}}
//     error {"error":{"type":"…","code":"…","message":"…"}}
//     response.created {"response":{"id":"resp_…"}}
//     response.output_audio.delta {"response_id","item_id","output_index","content_index","delta":"<base64>"}
//       (response.audio.delta in the beta interface)
//     response.output_audio_transcript.delta {"item_id","delta":"…"} (beta: response.audio_transcript.delta)
//     response.function_call_arguments.done {"item_id","call_id","name","arguments":"{…}"}
//     response.done {"response":{"id","status":"completed"|"cancelled"|"failed"|"incomplete","output":[…]}}
//     conversation.item.input_audio_transcription.completed {"item_id","transcript":"…"}
//     conversation.item.truncated {"item_id","content_index","audio_end_ms"}
//     with server_vad only:
//     input_audio_buffer.speech_started {"audio_start_ms":1000,"item_id":"…"}
//       "Milliseconds from the start of all audio written to the buffer during the session when speech was
//        first detected" (includes prefix_padding_ms); "The client may want to use this event to interrupt
//        audio playback".
//     input_audio_buffer.speech_stopped {"audio_end_ms":2000,"item_id":"…"}
//     input_audio_buffer.committed {"previous_item_id":"…","item_id":"…"}, then response.created of the
//       server's own response.
//
// The official SDK is not used: it opens its own socket, which would bypass the egress policy that
// every provider socket here opens under (net/websocket.ts).
import { z } from 'zod';
import type { OpenWebSocket, WebSocket } from '../../net/websocket.ts';
import { LlmError } from '../errors.ts';
import type { SpeechToSpeechSocket } from './speech-socket.ts';

/** G.711 μ-law at 8 kHz (a phone line's own), or PCM16 at 24 kHz (the only PCM rate the model takes). */
export type RealtimeAudioFormat = { type: 'audio/pcmu' } | { type: 'audio/pcm'; rate: 24000 };

export interface RealtimeFunction {
  type: 'function';
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

interface RealtimeSessionConfig {
  instructions: string;
  /** The model's own voice; the server's default when absent. */
  voice?: string | undefined;
  format: RealtimeAudioFormat;
  tools: RealtimeFunction[];
  /** null: the client commits the caller's audio and asks for each response itself; else the model's own VAD. */
  turnDetection: null | ServerVad;
}

/** The model's own turn detection: it commits the caller's audio, answers, and cancels an answer talked over. */
interface ServerVad {
  type: 'server_vad';
  create_response: true;
  interrupt_response: true;
}

/** turn_detection for who ends the caller's turn (llm.turn_detection). */
export function turnDetectionOf(who: 'service' | 'model'): null | ServerVad {
  return who === 'model' ? { type: 'server_vad', create_response: true, interrupt_response: true } : null;
}

interface RealtimeUsage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
}

/** What the service acts on of the server's events, the beta and GA names alike. */
export type RealtimeEvent =
  | { kind: 'session'; type: string }
  | { kind: 'response_started'; responseId: string }
  | { kind: 'audio'; itemId: string; audio: Buffer }
  | { kind: 'words'; itemId: string; delta: string }
  | { kind: 'function_call'; itemId: string; callId: string; name: string; arguments: string }
  | { kind: 'response_done'; responseId: string; status: string; usage: RealtimeUsage | null }
  | { kind: 'caller_words'; itemId: string; transcript: string }
  | { kind: 'truncated'; itemId: string; audioEndMs: number }
  /** The model's VAD heard the caller start (ms of all audio appended in the session; null where not given). */
  | { kind: 'speech_started'; audioStartMs: number | null }
  | { kind: 'speech_stopped'; audioEndMs: number | null }
  /** The caller's audio so far became a conversation item (the model's VAD or our commit). */
  | { kind: 'committed' }
  /**
   * The model withdrew function calls it had asked for (Gemini's toolCallCancellation, or calls a resumed session
   * never made): no output goes back for them, and the ones still running are aborted.
   */
  | { kind: 'function_calls_cancelled'; callIds: string[] }
  | { kind: 'error'; code: string | null; message: string }
  /** An out-of-band text answer (writeAside) is done: its words, and how it ended. */
  | { kind: 'aside_done'; status: string; text: string }
  | { kind: 'other'; type: string };

/** Marks the service's out-of-band responses: the server gives it back on their response.created and response.done. */
const ASIDE_METADATA = { aside: 'true' } as const;

const Delta = z.looseObject({ item_id: z.string(), delta: z.string() });
const FunctionCallDone = z.looseObject({
  item_id: z.string(),
  call_id: z.string(),
  name: z.string(),
  arguments: z.string(),
});
const Response = z.looseObject({
  response: z.looseObject({
    id: z.string(),
    status: z.string().optional(),
    // Read only to tell the service's own out-of-band answers (asideRequest): anything else here is no reason to fail.
    metadata: z.unknown().optional(),
    usage: z.looseObject({ input_tokens: z.number(), output_tokens: z.number(), total_tokens: z.number() }).nullish(),
  }),
});
/** The words of an out-of-band answer's response.done; a part of another kind, or without text, is skipped. */
const AsideOutput = z.looseObject({
  response: z.looseObject({
    output: z.array(z.looseObject({ content: z.array(z.unknown()).nullish() })).nullish(),
  }),
});
const TextPart = z.looseObject({ type: z.enum(['output_text', 'text']), text: z.string() });
const CallerTranscript = z.looseObject({ item_id: z.string(), transcript: z.string() });
const Truncated = z.looseObject({ item_id: z.string(), audio_end_ms: z.number() });
const SpeechStarted = z.looseObject({ audio_start_ms: z.number().optional() });
const SpeechStopped = z.looseObject({ audio_end_ms: z.number().optional() });
const ServerError = z.looseObject({
  error: z.looseObject({ code: z.string().nullish(), message: z.string().nullish(), type: z.string().nullish() }),
});

/** One server message, parsed; throws an LlmError on one that is not JSON or breaks its documented shape. */
export function parseRealtimeEvent(text: string): RealtimeEvent {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new LlmError('LLM_BAD_CHUNK', 'a realtime event was not JSON', { cause: error });
  }
  const typed = z.looseObject({ type: z.string() }).safeParse(raw);
  if (!typed.success) throw new LlmError('LLM_BAD_CHUNK', 'a realtime event had no type');
  const type = typed.data.type;
  const parse = <T>(schema: z.ZodType<T>): T => {
    const parsed = schema.safeParse(raw);
    if (!parsed.success) throw new LlmError('LLM_BAD_CHUNK', `a ${type} event broke its shape`);
    return parsed.data;
  };
  switch (type) {
    case 'session.created':
    case 'session.updated':
      return { kind: 'session', type };
    case 'response.created': {
      const e = parse(Response);
      // The service's own out-of-band answer is none of the call's responses.
      if (isAside(e.response.metadata)) return { kind: 'other', type };
      return { kind: 'response_started', responseId: e.response.id };
    }
    case 'response.output_audio.delta':
    case 'response.audio.delta': {
      const e = parse(Delta);
      return { kind: 'audio', itemId: e.item_id, audio: Buffer.from(e.delta, 'base64') };
    }
    case 'response.output_audio_transcript.delta':
    case 'response.audio_transcript.delta': {
      const e = parse(Delta);
      return { kind: 'words', itemId: e.item_id, delta: e.delta };
    }
    case 'response.function_call_arguments.done': {
      const e = parse(FunctionCallDone);
      return { kind: 'function_call', itemId: e.item_id, callId: e.call_id, name: e.name, arguments: e.arguments };
    }
    case 'response.done': {
      const e = parse(Response);
      if (isAside(e.response.metadata)) {
        const parts = (parse(AsideOutput).response.output ?? []).flatMap((item) => item.content ?? []);
        const text = parts.flatMap((part) => {
          const read = TextPart.safeParse(part);
          return read.success ? [read.data.text] : [];
        });
        return { kind: 'aside_done', status: e.response.status ?? 'completed', text: text.join(' ').trim() };
      }
      const usage = e.response.usage;
      return {
        kind: 'response_done',
        responseId: e.response.id,
        status: e.response.status ?? 'completed',
        usage: usage
          ? { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens, total_tokens: usage.total_tokens }
          : null,
      };
    }
    case 'conversation.item.input_audio_transcription.completed': {
      const e = parse(CallerTranscript);
      return { kind: 'caller_words', itemId: e.item_id, transcript: e.transcript };
    }
    case 'conversation.item.truncated': {
      const e = parse(Truncated);
      return { kind: 'truncated', itemId: e.item_id, audioEndMs: e.audio_end_ms };
    }
    case 'input_audio_buffer.speech_started':
      return { kind: 'speech_started', audioStartMs: parse(SpeechStarted).audio_start_ms ?? null };
    case 'input_audio_buffer.speech_stopped':
      return { kind: 'speech_stopped', audioEndMs: parse(SpeechStopped).audio_end_ms ?? null };
    case 'input_audio_buffer.committed':
      return { kind: 'committed' };
    case 'error': {
      const e = parse(ServerError).error;
      return { kind: 'error', code: e.code ?? e.type ?? null, message: e.message ?? 'error' };
    }
    default:
      return { kind: 'other', type };
  }
}

function isAside(metadata: unknown): boolean {
  return z.looseObject({ aside: z.literal(ASIDE_METADATA.aside) }).safeParse(metadata).success;
}

/** The response.create of an out-of-band text answer, read against the conversation so far and added to none. */
export function asideRequest(instructions: string): Record<string, unknown> {
  return {
    type: 'response.create',
    response: { conversation: 'none', output_modalities: ['text'], instructions, metadata: ASIDE_METADATA },
  };
}

/** The session.update event for `config`. */
export function sessionUpdate(config: RealtimeSessionConfig): Record<string, unknown> {
  return {
    type: 'session.update',
    session: {
      type: 'realtime',
      instructions: config.instructions,
      output_modalities: ['audio'],
      audio: {
        input: { format: config.format, turn_detection: config.turnDetection },
        output: { format: config.format, ...(config.voice ? { voice: config.voice } : {}) },
      },
      tools: config.tools,
      tool_choice: 'auto',
    },
  };
}

interface RealtimeConnectOptions {
  /** The server's WebSocket (wss://api.openai.com/v1/realtime); `?model=` is added unless it has one. */
  baseUrl: string;
  model: string;
  apiKey?: string | undefined;
  signal?: AbortSignal;
}

/** The socket of one call to the model, as client events to send and server events to hear. */
export class OpenAiRealtimeSocket implements SpeechToSpeechSocket {
  private readonly listeners = new Set<(event: RealtimeEvent) => void>();
  private closedWith: Error | null = null;
  private readonly closeListeners = new Set<(error: Error) => void>();

  private constructor(private readonly socket: WebSocket) {
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) return;
      let event: RealtimeEvent;
      try {
        event = parseRealtimeEvent(data.toString('utf8'));
      } catch (error) {
        event = { kind: 'error', code: 'bad_event', message: (error as Error).message };
      }
      for (const listener of [...this.listeners]) listener(event);
    });
    socket.on('close', (code: number) =>
      this.closed(new LlmError('LLM_NETWORK', `the realtime socket closed (${code})`)),
    );
    socket.on('error', (error: Error) =>
      this.closed(new LlmError('LLM_NETWORK', 'the realtime socket failed', { cause: error })),
    );
  }

  /** Opens the socket through `open` (the egress policy's opener). */
  static async connect(open: OpenWebSocket, o: RealtimeConnectOptions): Promise<OpenAiRealtimeSocket> {
    const url = new URL(o.baseUrl);
    if (!url.searchParams.has('model')) url.searchParams.set('model', o.model);
    try {
      const socket = await open(url.toString(), {
        headers: o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {},
        ...(o.signal ? { signal: o.signal } : {}),
      });
      return new OpenAiRealtimeSocket(socket);
    } catch (error) {
      const status = (error as { status?: unknown }).status;
      throw new LlmError(
        typeof status === 'number' ? 'LLM_HTTP_STATUS' : 'LLM_NETWORK',
        'the realtime socket did not open',
        { cause: error, ...(typeof status === 'number' ? { status } : {}) },
      );
    }
  }

  /** Why the socket is gone, once it is. */
  get failure(): Error | null {
    return this.closedWith;
  }

  /** Hears every server event until the returned function is called. */
  on(listener: (event: RealtimeEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onClose(listener: (error: Error) => void): () => void {
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }

  configure(config: RealtimeSessionConfig): void {
    this.send(sessionUpdate(config));
  }

  /** The caller's audio in the session's format. */
  append(audio: Uint8Array): void {
    this.send({ type: 'input_audio_buffer.append', audio: Buffer.from(audio).toString('base64') });
  }

  commit(): void {
    this.send({ type: 'input_audio_buffer.commit' });
  }

  createResponse(): void {
    this.send({ type: 'response.create' });
  }

  cancelResponse(): void {
    this.send({ type: 'response.cancel' });
  }

  /**
   * The model's text answer to `instructions` about the conversation so far, out of band: nothing is spoken and the
   * conversation is left as it was. Rejects when the socket closes or the response does not complete.
   */
  writeAside(instructions: string): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const done = (): void => {
        stop();
        stopClose();
      };
      const stop = this.on((event) => {
        if (event.kind !== 'aside_done') return;
        done();
        if (event.status === 'completed') resolve(event.text);
        else reject(new LlmError('LLM_STREAM_ERROR', `the out-of-band response ended ${event.status}`));
      });
      const stopClose = this.onClose((error) => {
        done();
        reject(error);
      });
      if (this.closedWith) {
        done();
        reject(this.closedWith);
        return;
      }
      this.send(asideRequest(instructions));
    });
  }

  /** The model's audio item `itemId` was heard only up to `audioEndMs`: the server forgets the rest, words too. */
  truncate(itemId: string, audioEndMs: number): void {
    this.send({ type: 'conversation.item.truncate', item_id: itemId, content_index: 0, audio_end_ms: audioEndMs });
  }

  /** Nothing to say: truncate already made the server forget what was not heard. */
  heardOnly(_words: string): void {}

  functionOutput(callId: string, output: string): void {
    this.send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: callId, output } });
  }

  /** Words the model did not hear as audio: a system note, the service's own lines, keyed digits. */
  addText(role: 'system' | 'assistant' | 'user', text: string): void {
    const type = role === 'assistant' ? 'output_text' : 'input_text';
    this.send({ type: 'conversation.item.create', item: { type: 'message', role, content: [{ type, text }] } });
  }

  close(): void {
    this.listeners.clear();
    if (this.socket.readyState === this.socket.OPEN || this.socket.readyState === this.socket.CONNECTING)
      this.socket.close(1000);
  }

  private send(event: Record<string, unknown>): void {
    if (this.closedWith || this.socket.readyState !== this.socket.OPEN) return;
    this.socket.send(JSON.stringify(event));
  }

  private closed(error: Error): void {
    if (this.closedWith) return;
    this.closedWith = error;
    for (const listener of [...this.closeListeners]) listener(error);
  }
}
