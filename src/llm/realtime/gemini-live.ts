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
//      "inputAudioTranscription":{},"outputAudioTranscription":{},
//      "sessionResumption":{} | {"handle":"…"}}}
//       sessionResumption: "If included server will send LiveServerSessionResumptionUpdate messages";
//       handle: "Session resumption handle of previous session (session to restore). If not present new session
//       will be started."
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
//       "Notification for the client that a previously issued ToolCallMessage with the specified ids should have
//       been not executed and should be cancelled. If there were side-effects to those tool calls, clients may
//       attempt to undo the tool calls. This message occurs only in cases where the clients interrupt server turns."
//       (no functionResponse is sent for a cancelled id)
//     {"usageMetadata":{"promptTokenCount":…,"responseTokenCount":…,"totalTokenCount":…}}
//     {"sessionResumptionUpdate":{"newHandle":"…","resumable":true}}
//       newHandle: "New handle that represents state that can be resumed. Empty if resumable=false."
//       resumable: "True if session can be resumed at this point. It might be not possible to resume session at
//       some points. In that case we send update empty new_handle and resumable=false. Example of such case could
//       be model executing function calls or just generating. Resuming session (using previous session token) in
//       such state will result in some data loss."
//     {"goAway":{"timeLeft":"10s"}}   ("Server will disconnect soon"; timeLeft: "The time remaining before the
//       connection terminates", a protobuf Duration)
//       "The lifetime of a connection is limited as well, to around 10 minutes. When the connection terminates,
//       the session terminates as well. In this case, you can configure a single session to stay active over
//       multiple connections using session resumption. You'll also receive a GoAway message before the
//       connection ends, allowing you to take further actions."
//     errors close the socket with a status code and a reason.
//
// The protocol has no response ids, no "create a response" and no truncate, so this client frames them
// as the call side expects (speech-socket.ts): a response starts when asked for (after activityEnd, a
// toolResponse, or a complete text turn) and ends at turnComplete, interrupted or a toolCall; a barge-in
// is an activityStart; what the caller heard of a cut reply is told as a note in the next turn's context.
// While the model answers, the caller's audio is held back (its last seconds) rather than sent, since an
// activityStart would cut the answer off: it goes out when the answer ends or is cut.
// No out-of-band text answer (speech-socket.ts writeAside): responseModalities is fixed once, in the setup
// ("The requested modalities of the response"; a setup asking for both AUDIO and TEXT is refused as an invalid
// argument), and every clientContent turn is part of the session's conversation and answered in its audio. A
// warm transfer's summary on this engine is a chat-completions fallback model's, or the fixed one.
//
// With the model's own turn detection (llm.turn_detection "model"), the setup leaves automatic activity
// detection on: "realtimeInputConfig":{"automaticActivityDetection":
// {"disabled":false}} (automatic detection "when enabled (the default), the server automatically detects when
// the user starts and stops speaking"), and the client sends no activityStart/activityEnd: the caller's audio
// streams all the time. The server's first modelTurn or outputTranscription after the caller spoke starts a
// response the client did not ask for (it gets an id here all the same); "interrupted":true — the caller's
// speech cut the generation off (START_OF_ACTIVITY_INTERRUPTS) — is the barge-in, reported as the caller's
// speech start; turnComplete ends the model's turn. The protocol gives no times for the caller's speech.
// Text turns (notes, the words heard of a cut reply) wait for the end of a turn the model is speaking, since
// a clientContent would cut it off.
//
// Session resumption: every setup asks for it, and the latest newHandle of an update with resumable true is kept.
// On goAway the client moves the call to a new socket (same opener, so the same egress policy): the setup with
// the kept handle, and what the call sends meanwhile is queued for the new socket; the old one is closed once the
// new one is set up, so one socket stays open. The move waits for the model to be idle (no response streaming, no
// function call waiting for its output), since a handle taken then would lose it; the old socket still works until
// timeLeft. A socket the server closes unexpectedly (also one whose goAway time ran out mid-response) is resumed
// once the same way when a handle is known: the response under way is lost ("data loss"), so it ends for the call
// side as cancelled, and function calls waiting for their output are reported cancelled (the resumed session never
// made them). A resume that fails, or a close with no handle, is the socket's failure as before.
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
  /** Who ends the caller's turn: the service (activityStart/activityEnd), or the model's activity detection. */
  turns?: 'service' | 'model' | undefined;
}

/**
 * The setup message for `config`: who ends the caller's turn decides activity detection; both sides transcribed;
 * session resumption asked for, resuming the session of `handle` when given.
 */
export function geminiSetup(config: GeminiSessionConfig, handle?: string | null): Record<string, unknown> {
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
      realtimeInputConfig: { automaticActivityDetection: { disabled: config.turns !== 'model' } },
      inputAudioTranscription: {},
      outputAudioTranscription: {},
      sessionResumption: handle ? { handle } : {},
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
  toolCallCancellation: z.looseObject({ ids: z.array(z.string()).default([]) }).optional(),
  sessionResumptionUpdate: z
    .looseObject({ newHandle: z.string().optional(), resumable: z.boolean().optional() })
    .optional(),
  goAway: z.looseObject({ timeLeft: z.string().optional() }).optional(),
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

/** A socket whose setup was sent: `done` when its setupComplete comes, or with why it closed first. */
interface SettingUp {
  ws: WebSocket;
  done: (error: Error | null) => void;
}

/** The socket of one call to the model, framed as responses the way the call side asks for them. */
export class GeminiLiveSocket implements SpeechToSpeechSocket {
  private readonly listeners = new Set<(event: RealtimeEvent) => void>();
  private readonly closeListeners = new Set<(error: Error) => void>();
  private closedWith: Error | null = null;
  /** The call's socket (null until the first setup is complete). */
  private ws: WebSocket | null = null;
  private settingUp: SettingUp | null = null;
  /** Sockets left behind (closed, failed, replaced): their events are no longer the call's. */
  private readonly retired = new WeakSet<WebSocket>();
  /** close() was called: the call is over. */
  private closing = false;
  /** The latest handle of a resumable state of the session (sessionResumptionUpdate). */
  private resumeHandle: string | null = null;
  /** The server sent goAway: the call moves to a new socket once the model is idle. */
  private goingAway = false;
  /** A new socket is being set up: what the call sends is queued for it. */
  private moving = false;
  private queued: string[] = [];
  /** Why the call's socket closed while it moves (a resume, or a goAway's socket whose time ran out). */
  private lostWith: Error | null = null;
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
  /** Function calls the model waits for the output of. */
  private readonly pendingCalls = new Set<string>();
  /** Function calls the model withdrew: they get no functionResponse. */
  private readonly cancelledCalls = new Set<string>();
  private outputs: { id: string; name: string; response: Record<string, unknown> }[] = [];
  private usage: Usage | null = null;
  /** The model's activity detection ends the caller's turns: no activity signals, its own answers are responses. */
  private readonly modelTurns: boolean;
  /** The model is in a turn of its own (from its first content to turnComplete or interrupted). */
  private modelTurnOpen = false;
  /** The rest of a turn the service cut off is dropped, not taken for a new response. */
  private discarding = false;
  /** Text turns held while the model speaks a turn of its own (one now would cut it off), sent at its end. */
  private heldTurns: Record<string, unknown>[] = [];

  private constructor(
    private readonly open: OpenWebSocket,
    private readonly o: GeminiConnectOptions,
  ) {
    this.modelTurns = o.turns === 'model';
  }

  /** Opens the socket through `open` (the egress policy's opener), sends the setup and waits for setupComplete. */
  static async connect(open: OpenWebSocket, o: GeminiConnectOptions): Promise<GeminiLiveSocket> {
    const socket = new GeminiLiveSocket(open, o);
    const onAbort = (): void => socket.settingUp?.done(new LlmError('LLM_ABORTED', 'the call ended'));
    o.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      socket.ws = await socket.openSession(null);
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

  /**
   * "interrupted" is the only word of the caller starting to speak, and it comes only while the model generates: once
   * its turn is complete (its audio, sent faster than real time, may play on for seconds) the caller's speech is news
   * to it only as the next turn.
   */
  reportsCallerSpeech(): boolean {
    return this.modelTurnOpen;
  }

  append(audio: Uint8Array): void {
    const bytes = Buffer.from(audio);
    // The model's own detection hears the caller all the time, over its answers too (that is its barge-in).
    if (this.modelTurns) {
      this.sendAudio(bytes);
      return;
    }
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
    if (this.modelTurns) return;
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
    // Calls left unanswered here never will be: the model's next turn starts.
    this.pendingCalls.clear();
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
    if (!this.modelTurns) {
      this.openActivity();
      return;
    }
    this.discarding = this.modelTurnOpen;
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
    if (this.cancelledCalls.has(callId)) return;
    this.outputs.push({ id: callId, name: this.callNames.get(callId) ?? '', response: functionResponseOf(output) });
  }

  addText(role: 'system' | 'assistant' | 'user', text: string): void {
    this.sendTurn(role === 'assistant' ? 'model' : 'user', role === 'system' ? `[system note] ${text}` : text);
  }

  close(): void {
    this.listeners.clear();
    this.closing = true;
    this.settingUp?.done(new LlmError('LLM_ABORTED', 'the call ended'));
    const ws = this.ws;
    if (ws && (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING)) ws.close(1000);
  }

  /**
   * Opens a socket through the opener, sends the setup (resuming `handle`'s session when given) and waits for its
   * setupComplete; the socket's events are the call's from then on.
   */
  private async openSession(handle: string | null): Promise<WebSocket> {
    let ws: WebSocket;
    try {
      ws = await this.open(this.o.baseUrl, {
        headers: this.o.apiKey ? { 'x-goog-api-key': this.o.apiKey } : {},
        ...(this.o.signal ? { signal: this.o.signal } : {}),
      });
    } catch (error) {
      const status = (error as { status?: unknown }).status;
      throw new LlmError(
        typeof status === 'number' ? 'LLM_HTTP_STATUS' : 'LLM_NETWORK',
        'the Gemini Live socket did not open',
        { cause: error, ...(typeof status === 'number' ? { status } : {}) },
      );
    }
    if (this.closing) {
      this.retire(ws);
      throw new LlmError('LLM_ABORTED', 'the call ended');
    }
    const ready = new Promise<void>((resolve, reject) => {
      this.settingUp = { ws, done: (error) => (error ? reject(error) : resolve()) };
    });
    this.attach(ws);
    ws.send(JSON.stringify(geminiSetup(this.o, handle)));
    try {
      await ready;
    } catch (error) {
      this.retire(ws);
      throw error;
    } finally {
      if (this.settingUp?.ws === ws) this.settingUp = null;
    }
    return ws;
  }

  private attach(ws: WebSocket): void {
    ws.on('message', (data: Buffer) => {
      if (this.retired.has(ws)) return;
      let message: GeminiServerMessage;
      try {
        message = parseGeminiMessage(data.toString('utf8'));
      } catch (error) {
        this.emit({ kind: 'error', code: 'bad_event', message: (error as Error).message });
        return;
      }
      this.handle(ws, message);
      if (this.goingAway && !this.moving && this.resumeHandle && this.idle()) void this.moveSession();
    });
    ws.on('close', (code: number) =>
      this.lost(ws, new LlmError('LLM_NETWORK', `the Gemini Live socket closed (${code})`)),
    );
    ws.on('error', (error: Error) =>
      this.lost(ws, new LlmError('LLM_NETWORK', 'the Gemini Live socket failed', { cause: error })),
    );
  }

  /** A socket is gone: a setup fails, the call's socket is resumed once if a handle is known, else the call fails. */
  private lost(ws: WebSocket, error: Error): void {
    if (this.retired.has(ws)) return;
    this.retired.add(ws);
    if (this.settingUp?.ws === ws) {
      this.settingUp.done(error);
      return;
    }
    if (ws !== this.ws) return;
    if (this.closing || this.closedWith || !this.resumeHandle || this.lostWith) {
      this.closed(this.lostWith ?? error);
      return;
    }
    this.lostWith = error;
    this.loseWork();
    if (!this.moving) void this.moveSession();
  }

  /**
   * Moves the call to a new socket resuming the session of the kept handle: queued messages go to it, the old
   * socket is closed. If it cannot, the call stays on the old socket while it lives, else fails with why it closed.
   */
  private async moveSession(): Promise<void> {
    this.moving = true;
    this.goingAway = false;
    // An activity open on the old socket is not one on the new: the next audio opens one there.
    this.activityOpen = false;
    const old = this.ws;
    // A resume that fails leaves the call where it was (below).
    const next = await this.openSession(this.resumeHandle).catch(() => null);
    this.moving = false;
    if (next && !this.closing) {
      this.ws = next;
      this.lostWith = null;
      if (old) this.retire(old);
      this.flushQueued();
      return;
    }
    if (next) this.retire(next);
    const lost = this.lostWith;
    if (this.closing || lost) {
      this.queued = [];
      this.closed(lost ?? new LlmError('LLM_ABORTED', 'the call ended'));
      return;
    }
    this.flushQueued();
  }

  /** The response under way and the function calls waiting for their output, lost with the socket (data loss). */
  private loseWork(): void {
    if (this.responseId) this.done(this.responseId, 'cancelled', false);
    this.modelTurnOpen = false;
    this.discarding = false;
    if (this.pendingCalls.size > 0) this.cancelCalls([...this.pendingCalls]);
    this.busy = false;
  }

  /** The model is between turns: no response streams, no function call waits for its output. */
  private idle(): boolean {
    return this.responseId === null && this.pendingCalls.size === 0 && !this.modelTurnOpen;
  }

  private cancelCalls(ids: string[]): void {
    for (const id of ids) {
      this.cancelledCalls.add(id);
      this.pendingCalls.delete(id);
    }
    this.outputs = this.outputs.filter((o) => !this.cancelledCalls.has(o.id));
    if (this.pendingCalls.size === 0 && this.responseId === null) this.busy = false;
    this.emit({ kind: 'function_calls_cancelled', callIds: ids });
  }

  private retire(ws: WebSocket): void {
    this.retired.add(ws);
    if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close(1000);
  }

  private flushQueued(): void {
    const queued = this.queued;
    this.queued = [];
    const ws = this.ws;
    if (!ws || ws.readyState !== ws.OPEN) return;
    for (const text of queued) ws.send(text);
  }

  private sendTurn(role: 'user' | 'model', text: string): void {
    const message = { clientContent: { turns: [{ role, parts: [{ text }] }], turnComplete: false } };
    if (this.modelTurns && this.modelTurnOpen) this.heldTurns.push(message);
    else this.send(message);
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

  private handle(ws: WebSocket, m: GeminiServerMessage): void {
    if (m.setupComplete && this.settingUp?.ws === ws) {
      const settingUp = this.settingUp;
      this.settingUp = null;
      settingUp.done(null);
    }
    const update = m.sessionResumptionUpdate;
    if (update?.resumable && update.newHandle) this.resumeHandle = update.newHandle;
    if (m.goAway && ws === this.ws) this.goingAway = true;
    if (m.toolCallCancellation) {
      const ids = m.toolCallCancellation.ids.filter((id) => this.callNames.has(id) && !this.cancelledCalls.has(id));
      if (ids.length > 0) this.cancelCalls(ids);
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
    if (this.modelTurns) this.modelTurnFrom(m);
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
        this.pendingCalls.add(call.id);
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

  /**
   * The model's own turn taking: its first words or audio (or a toolCall) with no response open start one the
   * client did not ask for; interrupted is the caller speaking over it; a turn the service cut is dropped to its end.
   */
  private modelTurnFrom(m: GeminiServerMessage): void {
    const content = m.serverContent;
    if (content?.interrupted) this.emit({ kind: 'speech_started', audioStartMs: null });
    const speaks = (content?.modelTurn?.parts?.length ?? 0) > 0 || content?.outputTranscription !== undefined;
    if ((speaks || m.toolCall) && !this.discarding) {
      this.modelTurnOpen = true;
      if (this.responseId === null) {
        this.responseId = `gemini_${++this.seq}`;
        this.busy = true;
        this.emit({ kind: 'response_started', responseId: this.responseId });
      }
    }
    if (content?.turnComplete || content?.interrupted) {
      this.modelTurnOpen = false;
      if (this.discarding) {
        this.discarding = false;
        this.usage = null;
      }
      const held = this.heldTurns;
      this.heldTurns = [];
      for (const message of held) this.send(message);
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
    if (this.closedWith) return;
    const text = JSON.stringify(message);
    if (this.moving) {
      this.queued.push(text);
      return;
    }
    const ws = this.ws;
    if (ws && ws.readyState === ws.OPEN) ws.send(text);
  }

  private closed(error: Error): void {
    if (this.closedWith) return;
    this.closedWith = error;
    this.settingUp?.done(error);
    this.settingUp = null;
    for (const listener of [...this.closeListeners]) listener(error);
  }
}
