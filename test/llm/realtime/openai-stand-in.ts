// A stand-in for the OpenAI Realtime WebSocket server, speaking the protocol its header in
// src/llm/realtime/openai-realtime.ts quotes, with real results: the appended audio is read by the
// embedded recogniser (pocketsphinx) at each commit, a small script answers what it heard (echo it,
// or call a function on a keyword, or speak a function's output), and the embedded flite voice says
// the answer in the session's own audio format, with its transcript as deltas. Client events that
// break the documented shapes are answered with an error event, as the server does. A session that asks
// for the model's own turn detection (turn_detection {"type":"server_vad"}) is answered as the server does
// then: a simple energy gate (EnergyTurns) hears the caller start and stop in the appended audio, sends
// input_audio_buffer.speech_started / speech_stopped with their audio ms, commits the buffer itself
// (input_audio_buffer.committed) and answers after the silence with a response of its own.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { z } from 'zod';
import { muLawDecode, muLawEncode } from '../../../src/audio/g711.ts';
import { concatPcm } from '../../../src/audio/pcm.ts';
import { resample } from '../../../src/audio/resampler.ts';
import { PocketsphinxEngine } from '../../../src/speech/stt/pocketsphinx/engine.ts';
import { FliteTtsEngine } from '../../../src/speech/tts/flite.ts';
import type { SttStream } from '../../../src/speech/types.ts';

/** What the stand-in does for one response: say words, or call a function. */
export type StandInAnswer = { say: string } | { call: { name: string; arguments: string } };

/** `heard`: what the recogniser read of the last committed audio; `output`: a function's output just given, if any. */
export type StandInScript = (heard: string, output: string | null) => StandInAnswer;

export const echoScript: StandInScript = (heard, output) =>
  output !== null ? { say: `the tool answered ${output.replace(/[^a-z0-9 ]/gi, ' ')}` } : { say: `you said ${heard}` };

const AudioFormat = z.union([
  z.strictObject({ type: z.literal('audio/pcmu') }),
  z.strictObject({ type: z.literal('audio/pcm'), rate: z.literal(24000) }),
]);
const SessionUpdate = z.looseObject({
  type: z.literal('session.update'),
  session: z.looseObject({
    type: z.literal('realtime'),
    instructions: z.string().optional(),
    output_modalities: z.array(z.enum(['audio', 'text'])).optional(),
    audio: z.looseObject({
      input: z.looseObject({ format: AudioFormat, turn_detection: z.looseObject({ type: z.string() }).nullable() }),
      output: z.looseObject({ format: AudioFormat, voice: z.string().optional() }),
    }),
    tools: z
      .array(
        z.strictObject({
          type: z.literal('function'),
          name: z.string(),
          description: z.string(),
          parameters: z.record(z.string(), z.unknown()),
        }),
      )
      .optional(),
    tool_choice: z.string().optional(),
  }),
});
const ClientEvent = z.discriminatedUnion('type', [
  SessionUpdate,
  z.strictObject({ type: z.literal('input_audio_buffer.append'), audio: z.base64() }),
  z.strictObject({ type: z.literal('input_audio_buffer.commit') }),
  z.strictObject({
    type: z.literal('response.create'),
    response: z
      .strictObject({
        conversation: z.enum(['auto', 'none']).optional(),
        output_modalities: z.union([z.tuple([z.literal('audio')]), z.tuple([z.literal('text')])]).optional(),
        instructions: z.string().optional(),
        metadata: z.record(z.string().max(64), z.string().max(512)).optional(),
      })
      .optional(),
  }),
  z.strictObject({ type: z.literal('response.cancel') }),
  z.strictObject({
    type: z.literal('conversation.item.truncate'),
    item_id: z.string(),
    content_index: z.literal(0),
    audio_end_ms: z.int().nonnegative(),
  }),
  z.strictObject({
    type: z.literal('conversation.item.create'),
    item: z.union([
      z.strictObject({ type: z.literal('function_call_output'), call_id: z.string(), output: z.string() }),
      z.strictObject({
        type: z.literal('message'),
        role: z.enum(['system', 'user', 'assistant']),
        content: z.array(z.strictObject({ type: z.enum(['input_text', 'output_text']), text: z.string() })),
      }),
    ]),
  }),
]);
type ClientEvent = z.infer<typeof ClientEvent>;

export interface StandInOptions {
  script?: StandInScript;
  /** The text of an out-of-band text-only response (conversation "none"), from its instructions; null: no answer. */
  aside?: (instructions: string) => string | null;
  /** Audio per audio delta (ms). */
  chunkMs?: number;
}

/** One response's timing, for the bench: when its first audio delta went out (wall ms). */
export interface StandInResponse {
  id: string;
  firstAudioAt: number | null;
  said: string | null;
}

interface Connection {
  ws: WebSocket;
  format: 'pcmu' | 'pcm' | null;
  stt: Promise<SttStream> | null;
  heard: string;
  output: string | null;
  /** Audio ms of each assistant item sent. */
  itemMs: Map<string, number>;
  cancelled: Set<string>;
  queue: Promise<void>;
  gate: SoundGate;
  /** The session asked for the model's own turn detection: the stand-in's energy gate ends the caller's turns. */
  turns: EnergyTurns | null;
  /** The item the caller's speech under way becomes. */
  speechItem: string | null;
}

/**
 * The stand-ins' own turn detection (a test double's, not a model's): 20 ms pieces louder than a gate are
 * speech; three in a row start it (reported from 300 ms before, the padding the server counts in), and
 * `silenceMs` without one stop it (reported at the end of the last loud piece). Times are ms of all audio given.
 */
export class EnergyTurns {
  private ms = 0;
  private speaking = false;
  private loudRun = 0;
  private lastLoudEnd = 0;

  constructor(private readonly silenceMs = 500) {}

  push(pcm: Int16Array, rate: number): { type: 'start' | 'stop'; atMs: number }[] {
    const size = (rate * 20) / 1000;
    const out: { type: 'start' | 'stop'; atMs: number }[] = [];
    for (let i = 0; i < pcm.length; i += size) {
      const piece = pcm.subarray(i, i + size);
      const pieceMs = (piece.length * 1000) / rate;
      if (rmsOf(piece) > 300) {
        this.loudRun++;
        this.lastLoudEnd = this.ms + pieceMs;
        if (!this.speaking && this.loudRun >= 3) {
          this.speaking = true;
          out.push({ type: 'start', atMs: Math.max(0, Math.round(this.ms - 2 * 20 - 300)) });
        }
      } else {
        this.loudRun = 0;
        if (this.speaking && this.ms + pieceMs - this.lastLoudEnd >= this.silenceMs) {
          this.speaking = false;
          out.push({ type: 'stop', atMs: Math.round(this.lastLoudEnd) });
        }
      }
      this.ms += pieceMs;
    }
    return out;
  }
}

/**
 * Lets through only audio with sound in it (and a little around it), so the recogniser reads the words,
 * not the minutes of a line's silence: the stand-in stays cheap on a busy machine.
 */
export class SoundGate {
  private readonly before: Int16Array[] = [];
  private quietAfter = 0;

  pass(pcm: Int16Array): Int16Array[] {
    const loud = rmsOf(pcm) > 200;
    if (loud) {
      const out = [...this.before.splice(0), pcm];
      this.quietAfter = 6;
      return out;
    }
    if (this.quietAfter > 0) {
      this.quietAfter--;
      return [pcm];
    }
    this.before.push(pcm);
    if (this.before.length > 3) this.before.shift();
    return [];
  }
}

function rmsOf(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / Math.max(1, pcm.length));
}

export class OpenAiRealtimeStandIn {
  /** Every client event received, in order (audio as its byte count). */
  readonly received: Record<string, unknown>[] = [];
  readonly responses: StandInResponse[] = [];
  /** The instructions of each out-of-band text-only response asked for. */
  readonly asides: string[] = [];
  readonly truncations: { item_id: string; audio_end_ms: number; item_ms: number }[] = [];
  /** The request line's query and headers of each connection. */
  readonly upgrades: { url: string; authorization: string | undefined }[] = [];
  /** Every server event sent but audio deltas, as its type with its audio ms if any: for a test that fails to print. */
  readonly sentTypes: string[] = [];
  private readonly server: Server;
  private readonly wss: WebSocketServer;
  private readonly stt = new PocketsphinxEngine({ workers: 1 });
  private readonly tts = new FliteTtsEngine({ voice: 'kal' });
  private seq = 0;

  private constructor(private readonly o: StandInOptions) {
    this.server = createServer((_req, res) => res.writeHead(404).end());
    this.wss = new WebSocketServer({ server: this.server, path: '/v1/realtime' });
    this.wss.on('connection', (ws, req) => {
      this.upgrades.push({ url: req.url ?? '', authorization: req.headers.authorization });
      this.accept(ws);
    });
  }

  static async start(o: StandInOptions = {}): Promise<OpenAiRealtimeStandIn> {
    const standIn = new OpenAiRealtimeStandIn(o);
    // The recogniser's model loads once, before the first call waits on it.
    const warm = await standIn.stt.open({ sampleRate: 8000, language: 'en-US' });
    await warm.close();
    await new Promise<void>((resolve) => standIn.server.listen(0, '127.0.0.1', resolve));
    return standIn;
  }

  /** ws://127.0.0.1:port/v1/realtime */
  get url(): string {
    return `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1/realtime`;
  }

  /** The types of the client events received, in order, appends left out. */
  types(): string[] {
    return this.received.map((e) => String(e.type)).filter((t) => t !== 'input_audio_buffer.append');
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
      format: null,
      stt: null,
      heard: '',
      output: null,
      itemMs: new Map(),
      cancelled: new Set(),
      queue: Promise.resolve(),
      gate: new SoundGate(),
      turns: null,
      speechItem: null,
    };
    this.send(c, { type: 'session.created', session: { id: `sess_${++this.seq}`, type: 'realtime' } });
    ws.on('message', (data: Buffer) => {
      c.queue = c.queue.then(() => this.handle(c, data.toString('utf8'))).catch(() => undefined);
    });
    ws.on('close', () => {
      void c.stt?.then((s) => s.close());
    });
  }

  private async handle(c: Connection, text: string): Promise<void> {
    const parsed = ClientEvent.safeParse(JSON.parse(text));
    if (!parsed.success) {
      this.received.push({ type: 'invalid', text: text.slice(0, 200) });
      this.error(c, 'invalid_request_error', 'invalid_event', 'the event broke its documented shape');
      return;
    }
    const event: ClientEvent = parsed.data;
    this.received.push(
      event.type === 'input_audio_buffer.append'
        ? { type: event.type, bytes: Buffer.from(event.audio, 'base64').length }
        : event,
    );
    switch (event.type) {
      case 'session.update': {
        c.format = event.session.audio.input.format.type === 'audio/pcmu' ? 'pcmu' : 'pcm';
        c.turns =
          event.session.audio.input.turn_detection?.type === 'server_vad' ? (c.turns ?? new EnergyTurns()) : null;
        const rate = c.format === 'pcmu' ? 8000 : 16000;
        c.stt ??= this.stt.open({ sampleRate: rate, language: 'en-US' });
        this.send(c, { type: 'session.updated', session: event.session });
        return;
      }
      case 'input_audio_buffer.append': {
        if (!c.stt || !c.format) return this.error(c, 'invalid_request_error', 'no_session', 'no session.update yet');
        const bytes = Buffer.from(event.audio, 'base64');
        const stream = await c.stt;
        const pcm = c.format === 'pcmu' ? muLawDecode(bytes) : resample(pcmOf(bytes), 24000, 16000);
        for (const part of c.gate.pass(pcm)) stream.push(part);
        for (const turn of c.turns?.push(pcm, c.format === 'pcmu' ? 8000 : 16000) ?? []) {
          if (turn.type === 'start') {
            c.speechItem = `item_${++this.seq}`;
            this.send(c, {
              type: 'input_audio_buffer.speech_started',
              audio_start_ms: turn.atMs,
              item_id: c.speechItem,
            });
            continue;
          }
          const item = c.speechItem ?? `item_${++this.seq}`;
          c.speechItem = null;
          this.send(c, { type: 'input_audio_buffer.speech_stopped', audio_end_ms: turn.atMs, item_id: item });
          await this.commit(c, item);
          await this.respond(c);
        }
        return;
      }
      case 'input_audio_buffer.commit': {
        if (!c.stt) return this.error(c, 'invalid_request_error', 'no_session', 'no session.update yet');
        await this.commit(c, `item_${++this.seq}`);
        return;
      }
      case 'response.create':
        if (event.response?.conversation === 'none' && event.response.output_modalities?.[0] === 'text')
          return this.writeAside(c, event.response.instructions ?? '', event.response.metadata ?? {});
        await this.respond(c);
        return;
      case 'response.cancel':
        return;
      case 'conversation.item.truncate': {
        const itemMs = c.itemMs.get(event.item_id);
        if (itemMs === undefined || event.audio_end_ms > itemMs)
          return this.error(c, 'invalid_request_error', 'invalid_value', 'audio_end_ms is past the audio');
        this.truncations.push({ item_id: event.item_id, audio_end_ms: event.audio_end_ms, item_ms: itemMs });
        this.send(c, {
          type: 'conversation.item.truncated',
          item_id: event.item_id,
          content_index: 0,
          audio_end_ms: event.audio_end_ms,
        });
        return;
      }
      case 'conversation.item.create':
        if (event.item.type === 'function_call_output') c.output = event.item.output;
        this.send(c, { type: 'conversation.item.created', item: { id: `item_${++this.seq}`, ...event.item } });
    }
  }

  /** The buffer so far as the caller's item `item`, read by the recogniser. */
  private async commit(c: Connection, item: string): Promise<void> {
    c.heard = (await (await c.stt!).finalize()).text;
    this.send(c, { type: 'input_audio_buffer.committed', previous_item_id: null, item_id: item });
    this.send(c, {
      type: 'conversation.item.input_audio_transcription.completed',
      item_id: item,
      content_index: 0,
      transcript: c.heard,
    });
  }

  private async respond(c: Connection): Promise<void> {
    const id = `resp_${++this.seq}`;
    const answer = (this.o.script ?? echoScript)(c.heard, c.output);
    c.output = null;
    c.heard = '';
    const record: StandInResponse = { id, firstAudioAt: null, said: 'say' in answer ? answer.say : null };
    this.responses.push(record);
    this.send(c, { type: 'response.created', response: { id, object: 'realtime.response', status: 'in_progress' } });
    const item = `item_${++this.seq}`;
    const output: Record<string, unknown>[] = [];
    if ('call' in answer) {
      const callId = `call_${++this.seq}`;
      const fn = { id: item, type: 'function_call', name: answer.call.name, call_id: callId, arguments: '' };
      this.send(c, { type: 'response.output_item.added', response_id: id, output_index: 0, item: fn });
      this.send(c, {
        type: 'response.function_call_arguments.done',
        response_id: id,
        item_id: item,
        output_index: 0,
        call_id: callId,
        name: answer.call.name,
        arguments: answer.call.arguments,
      });
      output.push({ ...fn, arguments: answer.call.arguments, status: 'completed' });
    } else {
      const rate = c.format === 'pcmu' ? 8000 : 24000;
      const pieces = [];
      for await (const chunk of this.tts.synthesize(answer.say, { sampleRate: rate })) pieces.push(chunk.samples);
      const pcm = concatPcm(pieces);
      const where = { response_id: id, item_id: item, output_index: 0, content_index: 0 };
      this.send(c, {
        type: 'response.output_item.added',
        response_id: id,
        output_index: 0,
        item: { id: item, type: 'message', role: 'assistant', content: [] },
      });
      const chunk = Math.round(((this.o.chunkMs ?? 100) * rate) / 1000);
      const words = answer.say.split(/\s+/).filter(Boolean);
      const chunks = Math.max(1, Math.ceil(pcm.length / chunk));
      let said = 0;
      for (let i = 0; i < chunks; i++) {
        const samples = pcm.subarray(i * chunk, (i + 1) * chunk);
        const bytes =
          c.format === 'pcmu'
            ? muLawEncode(samples)
            : new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength);
        record.firstAudioAt ??= Date.now();
        this.send(c, { type: 'response.output_audio.delta', ...where, delta: Buffer.from(bytes).toString('base64') });
        // The transcript runs a little ahead of the audio, as the server's does.
        const due = Math.min(words.length, Math.ceil(((i + 2) / chunks) * words.length));
        for (; said < due; said++)
          this.send(c, {
            type: 'response.output_audio_transcript.delta',
            ...where,
            delta: said === 0 ? words[said] : ` ${words[said]}`,
          });
      }
      c.itemMs.set(item, Math.floor((pcm.length / rate) * 1000));
      this.send(c, { type: 'response.output_audio.done', ...where });
      this.send(c, { type: 'response.output_audio_transcript.done', ...where, transcript: answer.say });
      output.push({ id: item, type: 'message', role: 'assistant', status: 'completed' });
    }
    this.send(c, {
      type: 'response.done',
      response: {
        id,
        object: 'realtime.response',
        status: 'completed',
        output,
        usage: { total_tokens: 30, input_tokens: 20, output_tokens: 10 },
      },
    });
  }

  /** An out-of-band text response: text events only, added to no conversation, its metadata given back. */
  private writeAside(c: Connection, instructions: string, metadata: Record<string, string>): void {
    this.asides.push(instructions);
    const text = this.o.aside ? this.o.aside(instructions) : 'A caller for you.';
    if (text === null) return;
    const id = `resp_${++this.seq}`;
    const item = `item_${++this.seq}`;
    const response = { id, object: 'realtime.response', conversation_id: null, metadata };
    this.send(c, { type: 'response.created', response: { ...response, status: 'in_progress', output: [] } });
    const where = { response_id: id, item_id: item, output_index: 0, content_index: 0 };
    for (const [i, word] of text.split(' ').entries())
      this.send(c, { type: 'response.output_text.delta', ...where, delta: i === 0 ? word : ` ${word}` });
    this.send(c, { type: 'response.output_text.done', ...where, text });
    this.send(c, {
      type: 'response.done',
      response: {
        ...response,
        status: 'completed',
        output: [{ id: item, type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] }],
        usage: { total_tokens: 30, input_tokens: 25, output_tokens: 5 },
      },
    });
  }

  private error(c: Connection, type: string, code: string, message: string): void {
    this.send(c, { type: 'error', error: { type, code, message } });
  }

  private send(c: Connection, event: Record<string, unknown>): void {
    if (event.type !== 'response.output_audio.delta') {
      const ms = event.audio_start_ms ?? event.audio_end_ms;
      this.sentTypes.push(ms === undefined ? String(event.type) : `${String(event.type)}@${String(ms)}`);
    }
    if (c.ws.readyState === c.ws.OPEN) c.ws.send(JSON.stringify({ event_id: `event_${++this.seq}`, ...event }));
  }
}

export function pcmOf(bytes: Buffer): Int16Array {
  const out = new Int16Array(bytes.length >> 1);
  new Uint8Array(out.buffer).set(bytes.subarray(0, out.byteLength));
  return out;
}
