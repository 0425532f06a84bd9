// A stand-in for the Gemini Live (BidiGenerateContent) WebSocket server, speaking the protocol its
// header in src/llm/realtime/gemini-live.ts quotes, with real results: the audio of each activity
// (activityStart … activityEnd) is read by the embedded recogniser (pocketsphinx) at its end, a small
// script answers what it heard (echo it, call a function on a keyword, or speak a function's output),
// and the embedded flite voice says the answer as PCM16 at 24 kHz in modelTurn inlineData, with its
// transcript as outputTranscription. The first message must be the setup; a message that breaks the
// documented shapes closes the socket with 1007, as the server does. A setup that leaves automatic
// activity detection on ({"disabled":false}) is answered as the server does then: a simple energy gate
// (EnergyTurns) hears the caller start and stop in the audio, the words are read and answered after the
// silence, and speech while the last answer would still be playing (its audio's length from when it was
// sent) is answered with {"serverContent":{"interrupted":true}}.
// Session management as the header quotes it: a setup with sessionResumption gets sessionResumptionUpdate
// handles (a new one when the session is set up and after each turn, resumable false while a function call
// waits for its output); a setup with a handle it issued resumes that session, one with a handle it does not
// know is refused by closing the socket (1007, as for any invalid argument). Test controls: goAway() sends
// {"goAway":{"timeLeft":"…s"}} and closes the socket when the time is up; drop() closes it unexpectedly
// (1011); cancelToolCall() sends toolCallCancellation for the function calls waiting for their output.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { z } from 'zod';
import { concatPcm } from '../../../src/audio/pcm.ts';
import { PocketsphinxEngine } from '../../../src/speech/stt/pocketsphinx/engine.ts';
import { FliteTtsEngine } from '../../../src/speech/tts/flite.ts';
import type { SttStream } from '../../../src/speech/types.ts';
import {
  echoScript,
  EnergyTurns,
  pcmOf,
  SoundGate,
  type StandInResponse,
  type StandInScript,
} from './openai-stand-in.ts';

export const GEMINI_PATH = '/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent';

const Setup = z.strictObject({
  setup: z.strictObject({
    model: z.string().regex(/^models\//),
    generationConfig: z.looseObject({
      responseModalities: z.array(z.enum(['AUDIO', 'TEXT'])),
      speechConfig: z
        .strictObject({
          voiceConfig: z.strictObject({ prebuiltVoiceConfig: z.strictObject({ voiceName: z.string() }) }),
        })
        .optional(),
    }),
    systemInstruction: z.strictObject({ parts: z.array(z.strictObject({ text: z.string() })) }).optional(),
    tools: z
      .array(
        z.strictObject({
          functionDeclarations: z.array(
            z.strictObject({
              name: z.string(),
              description: z.string(),
              parameters: z.record(z.string(), z.unknown()).optional(),
            }),
          ),
        }),
      )
      .optional(),
    realtimeInputConfig: z
      .strictObject({ automaticActivityDetection: z.strictObject({ disabled: z.boolean() }).optional() })
      .optional(),
    inputAudioTranscription: z.strictObject({}).optional(),
    outputAudioTranscription: z.strictObject({}).optional(),
    sessionResumption: z.strictObject({ handle: z.string().optional() }).optional(),
  }),
});
const Content = z.strictObject({
  role: z.enum(['user', 'model']),
  parts: z.array(z.strictObject({ text: z.string() })),
});
const ClientMessage = z.union([
  z.strictObject({
    realtimeInput: z.union([
      z.strictObject({ audio: z.strictObject({ data: z.base64(), mimeType: z.literal('audio/pcm;rate=16000') }) }),
      z.strictObject({ activityStart: z.strictObject({}) }),
      z.strictObject({ activityEnd: z.strictObject({}) }),
    ]),
  }),
  z.strictObject({
    clientContent: z.strictObject({ turns: z.array(Content).optional(), turnComplete: z.boolean().optional() }),
  }),
  z.strictObject({
    toolResponse: z.strictObject({
      functionResponses: z.array(
        z.strictObject({ id: z.string(), name: z.string(), response: z.record(z.string(), z.unknown()) }),
      ),
    }),
  }),
]);
type ClientMessage = z.infer<typeof ClientMessage>;

export interface GeminiStandInOptions {
  script?: StandInScript;
  /** Audio per message (ms). */
  chunkMs?: number;
}

interface Connection {
  ws: WebSocket;
  setup: boolean;
  stt: Promise<SttStream> | null;
  inActivity: boolean;
  heard: string;
  output: string | null;
  queue: Promise<void>;
  gate: SoundGate;
  /** Automatic activity detection is on: the stand-in's energy gate ends the caller's turns. */
  turns: EnergyTurns | null;
  /** Wall ms until the last answer's audio would have played. */
  speakingUntil: number;
  /** The setup asked for session resumption: handles are sent. */
  resumption: boolean;
  /** Function calls sent that wait for their output. */
  pendingCalls: string[];
}

export class GeminiLiveStandIn {
  /** Every client message received, in order (audio as its byte count), the setup first. */
  readonly received: Record<string, unknown>[] = [];
  readonly responses: StandInResponse[] = [];
  /** Text turns told to the model (clientContent), in order. */
  readonly told: { role: string; text: string }[] = [];
  /** Audio bytes that came outside an activity (with activity detection off, the model would not hear them). */
  outsideActivityBytes = 0;
  readonly upgrades: { url: string; apiKey: string | undefined }[] = [];
  /** Every handle issued (sessionResumptionUpdate.newHandle), in order. */
  readonly handles: string[] = [];
  /** Function call ids cancelled (toolCallCancellation). */
  readonly cancelled: string[] = [];
  /** How long a resumed session's setupComplete waits (ms): what the client sends meanwhile must wait for it. */
  resumeDelayMs = 0;
  private readonly known = new Set<string>();
  private readonly connections: Connection[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly server: Server;
  private readonly wss: WebSocketServer;
  private readonly stt = new PocketsphinxEngine({ workers: 1 });
  private readonly tts = new FliteTtsEngine({ voice: 'kal' });
  private seq = 0;

  private constructor(private readonly o: GeminiStandInOptions) {
    this.server = createServer((_req, res) => res.writeHead(404).end());
    this.wss = new WebSocketServer({ server: this.server, path: GEMINI_PATH });
    this.wss.on('connection', (ws, req) => {
      const key = req.headers['x-goog-api-key'];
      this.upgrades.push({ url: req.url ?? '', apiKey: typeof key === 'string' ? key : undefined });
      this.accept(ws);
    });
  }

  static async start(o: GeminiStandInOptions = {}): Promise<GeminiLiveStandIn> {
    const standIn = new GeminiLiveStandIn(o);
    const warm = await standIn.stt.open({ sampleRate: 16000, language: 'en-US' });
    await warm.close();
    await new Promise<void>((resolve) => standIn.server.listen(0, '127.0.0.1', resolve));
    return standIn;
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}${GEMINI_PATH}`;
  }

  /** Each message received: setup, activityStart, activityEnd, clientContent, toolResponse; audio left out. */
  kinds(): string[] {
    return this.received.map((m) => String(m.kind)).filter((k) => k !== 'audio');
  }

  /** The sockets open now. */
  openSockets(): number {
    return this.connections.filter((c) => c.ws.readyState === c.ws.OPEN).length;
  }

  /** Forgets every handle issued: a resume with one of them is refused. */
  forgetHandles(): void {
    this.known.clear();
  }

  /** The server will disconnect soon: goAway with `timeLeftMs`, then the socket closes when it is up. */
  goAway(timeLeftMs: number): void {
    const c = this.latest();
    this.send(c, { goAway: { timeLeft: `${timeLeftMs / 1000}s` } });
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      c.ws.close(1001, 'connection lifetime over');
    }, timeLeftMs);
    this.timers.add(timer);
  }

  /** The server closes the socket unexpectedly. */
  drop(): void {
    this.latest().ws.close(1011, 'internal error');
  }

  /** The model withdraws the function calls waiting for their output (the caller cut its turn). */
  cancelToolCall(): void {
    const c = this.latest();
    const ids = c.pendingCalls;
    c.pendingCalls = [];
    this.cancelled.push(...ids);
    this.send(c, { toolCallCancellation: { ids } });
    this.issueHandle(c);
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    for (const ws of this.wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await this.stt.close();
    await this.tts.close();
  }

  private accept(ws: WebSocket): void {
    const c: Connection = {
      ws,
      setup: false,
      stt: null,
      inActivity: false,
      heard: '',
      output: null,
      queue: Promise.resolve(),
      gate: new SoundGate(),
      turns: null,
      speakingUntil: 0,
      resumption: false,
      pendingCalls: [],
    };
    this.connections.push(c);
    ws.on('message', (data: Buffer) => {
      c.queue = c.queue.then(() => this.handle(c, data.toString('utf8'))).catch(() => undefined);
    });
    ws.on('close', () => {
      void c.stt?.then((s) => s.close());
    });
  }

  private refuse(c: Connection, text: string, why: string): void {
    this.received.push({ kind: 'invalid', text: text.slice(0, 200) });
    c.ws.close(1007, why);
  }

  private async handle(c: Connection, text: string): Promise<void> {
    const raw: unknown = JSON.parse(text);
    if (!c.setup) {
      const setup = Setup.safeParse(raw);
      if (!setup.success) return this.refuse(c, text, 'the first message must be a valid setup');
      this.received.push({ kind: 'setup', ...setup.data });
      const resumption = setup.data.setup.sessionResumption;
      if (resumption?.handle !== undefined && !this.known.has(resumption.handle))
        return void c.ws.close(1007, 'unknown session resumption handle');
      c.setup = true;
      c.resumption = resumption !== undefined;
      if (resumption?.handle !== undefined && this.resumeDelayMs > 0)
        await new Promise((r) => setTimeout(r, this.resumeDelayMs));
      c.stt = this.stt.open({ sampleRate: 16000, language: 'en-US' });
      if (setup.data.setup.realtimeInputConfig?.automaticActivityDetection?.disabled !== true)
        c.turns = new EnergyTurns();
      this.send(c, { setupComplete: {} });
      this.issueHandle(c);
      return;
    }
    const parsed = ClientMessage.safeParse(raw);
    if (!parsed.success) return this.refuse(c, text, 'invalid message');
    const m: ClientMessage = parsed.data;
    if ('realtimeInput' in m) {
      const input = m.realtimeInput;
      if ('audio' in input) {
        const bytes = Buffer.from(input.audio.data, 'base64');
        this.received.push({ kind: 'audio', bytes: bytes.length });
        if (c.turns) {
          await this.hearAuto(c, pcmOf(bytes));
          return;
        }
        if (!c.inActivity) {
          this.outsideActivityBytes += bytes.length;
          return;
        }
        const stream = await c.stt!;
        for (const part of c.gate.pass(pcmOf(bytes))) stream.push(part);
        return;
      }
      if ('activityStart' in input) {
        this.received.push({ kind: 'activityStart' });
        c.inActivity = true;
        return;
      }
      this.received.push({ kind: 'activityEnd' });
      c.inActivity = false;
      c.heard = (await (await c.stt!).finalize()).text;
      this.send(c, { serverContent: { inputTranscription: { text: c.heard } } });
      await this.respond(c);
      return;
    }
    if ('clientContent' in m) {
      this.received.push({ kind: 'clientContent', ...m.clientContent });
      for (const turn of m.clientContent.turns ?? [])
        this.told.push({ role: turn.role, text: turn.parts.map((p) => p.text).join('') });
      if (m.clientContent.turnComplete) await this.respond(c);
      return;
    }
    this.received.push({ kind: 'toolResponse', ...m.toolResponse });
    c.pendingCalls = [];
    c.output = JSON.stringify(m.toolResponse.functionResponses[0]?.response.output ?? null);
    await this.respond(c);
  }

  /** Automatic activity detection: the caller's audio heard, interrupting the answer still playing, answered. */
  private async hearAuto(c: Connection, pcm: Int16Array): Promise<void> {
    const stream = await c.stt!;
    for (const part of c.gate.pass(pcm)) stream.push(part);
    for (const turn of c.turns!.push(pcm, 16000)) {
      if (turn.type === 'start') {
        if (Date.now() < c.speakingUntil) this.send(c, { serverContent: { interrupted: true } });
        c.speakingUntil = 0;
        continue;
      }
      c.heard = (await stream.finalize()).text;
      this.send(c, { serverContent: { inputTranscription: { text: c.heard } } });
      await this.respond(c);
    }
  }

  private async respond(c: Connection): Promise<void> {
    const id = `turn_${++this.seq}`;
    const answer = (this.o.script ?? echoScript)(c.heard, c.output);
    c.output = null;
    c.heard = '';
    const record: StandInResponse = { id, firstAudioAt: null, said: 'say' in answer ? answer.say : null };
    this.responses.push(record);
    if ('call' in answer) {
      const callId = `fc_${++this.seq}`;
      c.pendingCalls.push(callId);
      if (c.resumption) this.send(c, { sessionResumptionUpdate: { newHandle: '', resumable: false } });
      this.send(c, {
        toolCall: {
          functionCalls: [{ id: callId, name: answer.call.name, args: JSON.parse(answer.call.arguments) as unknown }],
        },
      });
      return;
    }
    const rate = 24000;
    const pieces = [];
    for await (const chunk of this.tts.synthesize(answer.say, { sampleRate: rate })) pieces.push(chunk.samples);
    const pcm = concatPcm(pieces);
    const chunk = Math.round(((this.o.chunkMs ?? 100) * rate) / 1000);
    const words = answer.say.split(/\s+/).filter(Boolean);
    const chunks = Math.max(1, Math.ceil(pcm.length / chunk));
    c.speakingUntil = Date.now() + (pcm.length / rate) * 1000;
    let said = 0;
    for (let i = 0; i < chunks; i++) {
      const samples = pcm.subarray(i * chunk, (i + 1) * chunk);
      const data = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength).toString('base64');
      record.firstAudioAt ??= Date.now();
      this.send(c, {
        serverContent: { modelTurn: { parts: [{ inlineData: { mimeType: 'audio/pcm;rate=24000', data } }] } },
      });
      // The transcript runs a little ahead of the audio, as the server's does.
      const due = Math.min(words.length, Math.ceil(((i + 2) / chunks) * words.length));
      const next = words.slice(said, due);
      said = due;
      if (next.length > 0)
        this.send(c, {
          serverContent: { outputTranscription: { text: `${said - next.length === 0 ? '' : ' '}${next.join(' ')}` } },
        });
    }
    this.send(c, { serverContent: { generationComplete: true } });
    this.send(c, {
      serverContent: { turnComplete: true },
      usageMetadata: { promptTokenCount: 20, responseTokenCount: 10, totalTokenCount: 30 },
    });
    this.issueHandle(c);
  }

  /** A resumable state: a new handle, when the setup asked for them. */
  private issueHandle(c: Connection): void {
    if (!c.resumption) return;
    const handle = `session_${++this.seq}`;
    this.handles.push(handle);
    this.known.add(handle);
    this.send(c, { sessionResumptionUpdate: { newHandle: handle, resumable: true } });
  }

  private latest(): Connection {
    const c = this.connections.findLast((k) => k.setup && k.ws.readyState === k.ws.OPEN);
    if (!c) throw new Error('no socket open');
    return c;
  }

  private send(c: Connection, message: Record<string, unknown>): void {
    if (c.ws.readyState === c.ws.OPEN) c.ws.send(JSON.stringify(message));
  }
}
