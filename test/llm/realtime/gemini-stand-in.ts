// A stand-in for the Gemini Live (BidiGenerateContent) WebSocket server, speaking the protocol its
// header in src/llm/realtime/gemini-live.ts quotes, with real results: the audio of each activity
// (activityStart … activityEnd) is read by the embedded recogniser (pocketsphinx) at its end, a small
// script answers what it heard (echo it, call a function on a keyword, or speak a function's output),
// and the embedded flite voice says the answer as PCM16 at 24 kHz in modelTurn inlineData, with its
// transcript as outputTranscription. The first message must be the setup; a message that breaks the
// documented shapes closes the socket with 1007, as the server does.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { z } from 'zod';
import { concatPcm } from '../../../src/audio/pcm.ts';
import { PocketsphinxEngine } from '../../../src/speech/stt/pocketsphinx/engine.ts';
import { FliteTtsEngine } from '../../../src/speech/tts/flite.ts';
import type { SttStream } from '../../../src/speech/types.ts';
import { echoScript, pcmOf, SoundGate, type StandInResponse, type StandInScript } from './openai-stand-in.ts';

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

  async close(): Promise<void> {
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
    };
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
      c.setup = true;
      c.stt = this.stt.open({ sampleRate: 16000, language: 'en-US' });
      this.send(c, { setupComplete: {} });
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
    c.output = JSON.stringify(m.toolResponse.functionResponses[0]?.response.output ?? null);
    await this.respond(c);
  }

  private async respond(c: Connection): Promise<void> {
    const id = `turn_${++this.seq}`;
    const answer = (this.o.script ?? echoScript)(c.heard, c.output);
    c.output = null;
    c.heard = '';
    const record: StandInResponse = { id, firstAudioAt: null, said: 'say' in answer ? answer.say : null };
    this.responses.push(record);
    if ('call' in answer) {
      this.send(c, {
        toolCall: {
          functionCalls: [
            { id: `fc_${++this.seq}`, name: answer.call.name, args: JSON.parse(answer.call.arguments) as unknown },
          ],
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
  }

  private send(c: Connection, message: Record<string, unknown>): void {
    if (c.ws.readyState === c.ws.OPEN) c.ws.send(JSON.stringify(message));
  }
}
