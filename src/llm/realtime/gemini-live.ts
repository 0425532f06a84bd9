// The Gemini Live API (BidiGenerateContent over a WebSocket), as this service speaks it: one socket
// per call, JSON messages both ways, audio base64 in them. What is relied on, from the provider's
// WebSockets API reference:
//
//   wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent
//   the API key as the `key` query parameter or the `x-goog-api-key` header (the header is used: no key in a URL)
//
//   client → server (each message has exactly one of these fields)
//     {"setup":{"model":"models/…","generationConfig":{"responseModalities":["AUDIO"],
//        "speechConfig":{"voiceConfig":{"prebuiltVoiceConfig":{"voiceName":"Kore"}}}},
//      "systemInstruction":{"parts":[{"text":"…"}]},
//      "tools":[{"functionDeclarations":[{"name":"…","description":"…","parameters":{…}}]}],
//      "realtimeInputConfig":{"automaticActivityDetection":{"disabled":true}},
//      "inputAudioTranscription":{},"outputAudioTranscription":{}}}
//       "The client should wait for a BidiGenerateContentSetupComplete message before sending any additional messages."
//       "If automatic voice detection is disabled, the client must send activity signals."
//     {"realtimeInput":{"audio":{"data":"<base64>","mimeType":"audio/pcm;rate=16000"}}}
//       audio in: raw 16-bit PCM, little-endian, 16 kHz; audio out: 24 kHz.
//     {"realtimeInput":{"activityStart":{}}}   {"realtimeInput":{"activityEnd":{}}}
//       activityStart also cuts off the model's current response (the default START_OF_ACTIVITY_INTERRUPTS).
//     {"clientContent":{"turns":[{"role":"user"|"model","parts":[{"text":"…"}]}],"turnComplete":false}}
//       "turnComplete: If true, indicates that the server content generation should start with the currently
//        accumulated prompt. Otherwise, the server awaits additional messages before starting generation."
//       "A message here will interrupt any current model generation." (so text turns go only between answers)
//     {"toolResponse":{"functionResponses":[{"id":"…","name":"…","response":{"output":…}}]}}
//
//   server → client
//     {"setupComplete":{}}
//     {"serverContent":{"modelTurn":{"parts":[{"inlineData":{"mimeType":"audio/pcm;rate=24000","data":"<base64>"}}]},
//      "outputTranscription":{"text":"…"},"inputTranscription":{"text":"…"},
//      "generationComplete":true,"turnComplete":true,"interrupted":true}}
//       inputTranscription "is sent independently of the other server messages and there is no guaranteed
//       ordering" (the record's caller words are the agent's own recogniser's).
//     {"toolCall":{"functionCalls":[{"id":"…","name":"…","args":{…}}]}}
//     {"toolCallCancellation":{"ids":["…"]}}
//     {"usageMetadata":{"promptTokenCount":…,"responseTokenCount":…,"totalTokenCount":…}}
//     {"goAway":{"timeLeft":"…"}}
//     errors close the socket with a status code and a reason.
//
// The protocol has no response ids, no "create a response" and no truncate, so this client frames them
// as the call side expects (speech-socket.ts): a response starts when asked for (after activityEnd, a
// toolResponse, or a complete text turn) and ends at turnComplete, interrupted or a toolCall; a barge-in
// is an activityStart; what the caller heard of a cut reply is told as a note in the next turn's context.
// While the model answers, the caller's audio is held back (its last seconds) rather than sent, since an
// activityStart would cut the answer off: it goes out when the answer ends or is cut.
// The official SDK is not used: it opens its own socket, which would bypass the egress policy.
import { z } from 'zod';
import type { OpenWebSocket, WebSocket } from '../../net/websocket.ts';
import { LlmError } from '../errors.ts';
import type { RealtimeEvent, SpeechFunction, SpeechToSpeechSocket } from './speech-socket.ts';

export const GEMINI_LIVE_INPUT_RATE = 16_000;
export const GEMINI_LIVE_OUTPUT_RATE = 24_000;
const INPUT_MIME = `audio/pcm;rate=${GEMINI_LIVE_INPUT_RATE}`;
/** Caller audio held back while the model answers: the last 2 s (16 kHz PCM16). */
const MAX_HELD_BYTES = 2 * GEMINI_LIVE_INPUT_RATE * 2;

interface GeminiSessionConfig {
  model: string;
  instructions: string;
  voice?: string | undefined;
  tools: SpeechFunction[];
}

/** The setup message for `config`: our end of turn decides (activity detection off), both sides transcribed. */
export function geminiSetup(config: GeminiSessionConfig): Record<string, unknown> {
  return {
    setup: {
      model: config.model.startsWith('models/') ? config.model : `models/${config.model}`,
      generationConfig: {
        responseModalities: ['AUDIO'],
        ...(config.voice
          ? { speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: config.voice } } } }
          : {}),
      },
      systemInstruction: { parts: [{ text: config.instructions }] },
      ...(config.tools.length > 0 ? { tools: [{ functionDeclarations: config.tools }] } : {}),
      realtimeInputConfig: { automaticActivityDetection: { disabled: true } },
      inputAudioTranscription: {},
      outputAudioTranscription: {},
    },
  };
}

const Text = z.looseObject({ text: z.string() });
const ServerMessage = z.looseObject({
  setupComplete: z.looseObject({}).optional(),
  serverContent: z
    .looseObject({
      modelTurn: z
        .looseObject({
          parts: z
            .array(
              z.looseObject({
                inlineData: z.looseObject({ mimeType: z.string().optional(), data: z.string() }).optional(),
              }),
            )
            .optional(),
        })
        .optional(),
      outputTranscription: Text.optional(),
      inputTranscription: Text.optional(),
      turnComplete: z.boolean().optional(),
      interrupted: z.boolean().optional(),
    })
    .optional(),
  toolCall: z
    .looseObject({
      functionCalls: z
        .array(z.looseObject({ id: z.string(), name: z.string(), args: z.record(z.string(), z.unknown()).optional() }))
        .default([]),
    })
    .optional(),
  usageMetadata: z
    .looseObject({
      promptTokenCount: z.number().optional(),
      responseTokenCount: z.number().optional(),
      totalTokenCount: z.number().optional(),
    })
    .optional(),
});
export type GeminiServerMessage = z.infer<typeof ServerMessage>;

/** One server message, parsed; throws an LlmError on one that is not JSON or breaks its documented shape. */
export function parseGeminiMessage(text: string): GeminiServerMessage {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new LlmError('LLM_BAD_CHUNK', 'a Gemini Live message was not JSON', { cause: error });
  }
  const parsed = ServerMessage.safeParse(raw);
  if (!parsed.success) throw new LlmError('LLM_BAD_CHUNK', 'a Gemini Live message broke its shape');
  return parsed.data;
}

/** A function's output as the `response` object the protocol takes: `{"output": …}`. */
export function functionResponseOf(output: string): Record<string, unknown> {
  try {
    return { output: JSON.parse(output) as unknown };
  } catch {
    return { output };
  }
}

interface GeminiConnectOptions extends GeminiSessionConfig {
  /** The server's WebSocket (…GenerativeService.BidiGenerateContent). */
  baseUrl: string;
  apiKey?: string | undefined;
  signal?: AbortSignal;
}

interface Usage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
}

/** The socket of one call to the model, framed as responses the way the call side asks for them. */
export class GeminiLiveSocket implements SpeechToSpeechSocket {
  private readonly listeners = new Set<(event: RealtimeEvent) => void>();
  private readonly closeListeners = new Set<(error: Error) => void>();
  private closedWith: Error | null = null;
  private seq = 0;
  /** The response being streamed, or null. */
  private responseId: string | null = null;
  /** The model is answering (or waits for our toolResponse): caller audio is held back. */
  private busy = false;
  private activityOpen = false;
  /** activityEnd sent since the last response: the model answers the caller's audio. */
  private turnEnded = false;
  private held: Buffer[] = [];
  private heldBytes = 0;
  private readonly callNames = new Map<string, string>();
  private outputs: { id: string; name: string; response: Record<string, unknown> }[] = [];
  private usage: Usage | null = null;
  private setupDone: ((error: Error | null) => void) | null = null;

  private constructor(private readonly socket: WebSocket) {
    socket.on('message', (data: Buffer) => {
      let message: GeminiServerMessage;
      try {
        message = parseGeminiMessage(data.toString('utf8'));
      } catch (error) {
        this.emit({ kind: 'error', code: 'bad_event', message: (error as Error).message });
        return;
      }
      this.handle(message);
    });
    socket.on('close', (code: number) =>
      this.closed(new LlmError('LLM_NETWORK', `the Gemini Live socket closed (${code})`)),
    );
    socket.on('error', (error: Error) =>
      this.closed(new LlmError('LLM_NETWORK', 'the Gemini Live socket failed', { cause: error })),
    );
  }

  /** Opens the socket through `open` (the egress policy's opener), sends the setup and waits for setupComplete. */
  static async connect(open: OpenWebSocket, o: GeminiConnectOptions): Promise<GeminiLiveSocket> {
    let ws: WebSocket;
    try {
      ws = await open(o.baseUrl, {
        headers: o.apiKey ? { 'x-goog-api-key': o.apiKey } : {},
        ...(o.signal ? { signal: o.signal } : {}),
      });
    } catch (error) {
      const status = (error as { status?: unknown }).status;
      throw new LlmError(
        typeof status === 'number' ? 'LLM_HTTP_STATUS' : 'LLM_NETWORK',
        'the Gemini Live socket did not open',
        { cause: error, ...(typeof status === 'number' ? { status } : {}) },
      );
    }
    const socket = new GeminiLiveSocket(ws);
    const ready = new Promise<void>((resolve, reject) => {
      socket.setupDone = (error) => (error ? reject(error) : resolve());
    });
    const onAbort = (): void => socket.closed(new LlmError('LLM_ABORTED', 'the call ended'));
    o.signal?.addEventListener('abort', onAbort, { once: true });
    ws.send(JSON.stringify(geminiSetup(o)));
    try {
      await ready;
    } catch (error) {
      socket.close();
      throw error;
    } finally {
      o.signal?.removeEventListener('abort', onAbort);
    }
    return socket;
  }

  get failure(): Error | null {
    return this.closedWith;
  }

  on(listener: (event: RealtimeEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onClose(listener: (error: Error) => void): () => void {
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }

  append(audio: Uint8Array): void {
    const bytes = Buffer.from(audio);
    if (this.busy) {
      this.held.push(bytes);
      this.heldBytes += bytes.length;
      while (this.heldBytes > MAX_HELD_BYTES && this.held.length > 1) this.heldBytes -= this.held.shift()!.length;
      return;
    }
    this.openActivity();
    this.sendAudio(bytes);
  }

  commit(): void {
    this.openActivity();
    this.send({ realtimeInput: { activityEnd: {} } });
    this.activityOpen = false;
    this.turnEnded = true;
  }

  createResponse(): void {
    const id = `gemini_${++this.seq}`;
    this.responseId = id;
    this.busy = true;
    this.emit({ kind: 'response_started', responseId: id });
    if (this.outputs.length > 0) {
      this.send({ toolResponse: { functionResponses: this.outputs } });
      this.outputs = [];
    } else if (!this.turnEnded) this.send({ clientContent: { turnComplete: true } });
    this.turnEnded = false;
  }

  /** A barge-in: activityStart cuts the answer off, and the caller's audio held back goes with it. */
  cancelResponse(): void {
    this.responseId = null;
    this.busy = false;
    this.openActivity();
  }

  /** The protocol has no truncate: heardOnly tells the model instead. */
  truncate(_itemId: string, _audioEndMs: number): void {}

  heardOnly(words: string): void {
    const note = words.trim()
      ? `The caller cut your last reply short; they heard only: "${words.trim()}"`
      : 'The caller cut your last reply short before hearing any of it.';
    this.sendTurn('user', `[system note] ${note}`);
  }

  functionOutput(callId: string, output: string): void {
    this.outputs.push({ id: callId, name: this.callNames.get(callId) ?? '', response: functionResponseOf(output) });
  }

  addText(role: 'system' | 'assistant' | 'user', text: string): void {
    this.sendTurn(role === 'assistant' ? 'model' : 'user', role === 'system' ? `[system note] ${text}` : text);
  }

  close(): void {
    this.listeners.clear();
    if (this.socket.readyState === this.socket.OPEN || this.socket.readyState === this.socket.CONNECTING)
      this.socket.close(1000);
  }

  private sendTurn(role: 'user' | 'model', text: string): void {
    this.send({ clientContent: { turns: [{ role, parts: [{ text }] }], turnComplete: false } });
  }

  private openActivity(): void {
    if (this.activityOpen) return;
    this.send({ realtimeInput: { activityStart: {} } });
    this.activityOpen = true;
    const held = this.held;
    this.held = [];
    this.heldBytes = 0;
    if (held.length > 0) this.sendAudio(Buffer.concat(held));
  }

  private sendAudio(bytes: Buffer): void {
    this.send({ realtimeInput: { audio: { data: bytes.toString('base64'), mimeType: INPUT_MIME } } });
  }

  private handle(m: GeminiServerMessage): void {
    if (m.setupComplete) {
      this.setupDone?.(null);
      this.setupDone = null;
    }
    if (m.usageMetadata) {
      const u = m.usageMetadata;
      const input = u.promptTokenCount ?? 0;
      const output = u.responseTokenCount ?? 0;
      this.usage = { input_tokens: input, output_tokens: output, total_tokens: u.totalTokenCount ?? input + output };
    }
    const content = m.serverContent;
    if (content?.inputTranscription)
      this.emit({ kind: 'caller_words', itemId: '', transcript: content.inputTranscription.text });
    const id = this.responseId;
    if (content && id) {
      for (const part of content.modelTurn?.parts ?? []) {
        const data = part.inlineData;
        if (data && (data.mimeType ?? 'audio/pcm').startsWith('audio/pcm'))
          this.emit({ kind: 'audio', itemId: id, audio: Buffer.from(data.data, 'base64') });
      }
      if (content.outputTranscription)
        this.emit({ kind: 'words', itemId: id, delta: content.outputTranscription.text });
      if (content.interrupted) this.done(id, 'cancelled', false);
      else if (content.turnComplete) this.done(id, 'completed', false);
    }
    if (m.toolCall && this.responseId) {
      const rid = this.responseId;
      for (const call of m.toolCall.functionCalls) {
        this.callNames.set(call.id, call.name);
        this.emit({
          kind: 'function_call',
          itemId: rid,
          callId: call.id,
          name: call.name,
          arguments: JSON.stringify(call.args ?? {}),
        });
      }
      // The model waits for the toolResponse: it stays busy.
      this.done(rid, 'completed', true);
    }
  }

  private done(id: string, status: string, busy: boolean): void {
    this.responseId = null;
    this.busy = busy;
    const usage = this.usage;
    this.usage = null;
    this.emit({ kind: 'response_done', responseId: id, status, usage });
  }

  private emit(event: RealtimeEvent): void {
    for (const listener of [...this.listeners]) listener(event);
  }

  private send(message: Record<string, unknown>): void {
    if (this.closedWith || this.socket.readyState !== this.socket.OPEN) return;
    this.socket.send(JSON.stringify(message));
  }

  private closed(error: Error): void {
    if (this.closedWith) return;
    this.closedWith = error;
    this.setupDone?.(error);
    this.setupDone = null;
    for (const listener of [...this.closeListeners]) listener(error);
  }
}
