// A stand-in for Cartesia's /tts/websocket: it checks the X-API-Key and Cartesia-Version headers, reads
// the documented generation requests and cancels (zod), speaks each context's transcript with the embedded
// voice in the raw output_format asked for (pcm_mulaw or pcm_s16le at its sample_rate), one chunk per word
// followed by its word timestamps (seconds from the context's start), and "done" once a context with
// continue: false has all its audio out. An unknown model_id gets Cartesia's error message.
import { z } from 'zod';
import type { WebSocket } from 'ws';
import {
  completeWords,
  startStandIn,
  WordVoice,
  type StandInEncoding,
  type StandInHooks,
  type StandInServer,
} from '../stand-ins/common.ts';

export const CartesiaRequestSchema = z.strictObject({
  model_id: z.string().min(1),
  transcript: z.string(),
  voice: z.strictObject({ mode: z.literal('id'), id: z.string().min(1) }),
  language: z.string().optional(),
  context_id: z.string().min(1),
  output_format: z.strictObject({
    container: z.literal('raw'),
    encoding: z.enum(['pcm_s16le', 'pcm_mulaw', 'pcm_f32le', 'pcm_alaw']),
    sample_rate: z.int().positive(),
  }),
  add_timestamps: z.boolean().optional(),
  continue: z.boolean().optional(),
  generation_config: z
    .strictObject({
      speed: z.number().min(0.6).max(1.5).optional(),
      volume: z.number().min(0.5).max(2).optional(),
      emotion: z.string().optional(),
    })
    .optional(),
});
export const CartesiaCancelSchema = z.strictObject({ context_id: z.string().min(1), cancel: z.literal(true) });
const ClientMessageSchema = z.union([CartesiaCancelSchema, CartesiaRequestSchema]);

interface Context {
  transcript: string;
  chain: Promise<void>;
  cut: boolean;
  seconds: number;
  sentAudio: boolean;
}

export interface CartesiaStandIn extends StandInServer {
  readonly messages: z.infer<typeof ClientMessageSchema>[];
}

export async function startCartesiaStandIn(apiKey: string, hooks: StandInHooks = {}): Promise<CartesiaStandIn> {
  const voice = new WordVoice();
  const messages: z.infer<typeof ClientMessageSchema>[] = [];
  const server = await startStandIn({
    path: /^\/tts\/websocket$/,
    authorized: (request) => request.headers['x-api-key'] === apiKey && Boolean(request.headers['cartesia-version']),
    onConnection: (socket) => serve(socket, voice, messages, hooks),
  });
  return {
    get url() {
      return server.url;
    },
    get connections() {
      return server.connections;
    },
    get refused() {
      return server.refused;
    },
    messages,
    drop: () => server.drop(),
    async close() {
      await server.close();
      await voice.close();
    },
  };
}

function serve(
  socket: WebSocket,
  voice: WordVoice,
  messages: z.infer<typeof ClientMessageSchema>[],
  hooks: StandInHooks,
): void {
  const contexts = new Map<string, Context>();
  const send = (message: object): void => {
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
  };
  socket.on('message', (data) => {
    let message: z.infer<typeof ClientMessageSchema>;
    try {
      message = ClientMessageSchema.parse(JSON.parse(String(data)));
    } catch {
      send({
        type: 'error',
        done: true,
        title: 'Invalid request',
        message: 'bad message',
        error_code: 'invalid_request',
        status_code: 400,
      });
      return;
    }
    messages.push(message);
    const id = message.context_id;
    if ('cancel' in message) {
      const ctx = contexts.get(id);
      if (ctx) ctx.cut = true;
      contexts.delete(id);
      return;
    }
    if (message.model_id === 'no-such-model') {
      send({
        type: 'error',
        done: true,
        title: 'Invalid model',
        message: 'The model is not valid, make sure it is a valid model ID.',
        error_code: 'model_not_found',
        status_code: 400,
        context_id: id,
      });
      return;
    }
    let ctx = contexts.get(id);
    if (!ctx) {
      ctx = { transcript: '', chain: Promise.resolve(), cut: false, seconds: 0, sentAudio: false };
      contexts.set(id, ctx);
    }
    const context = ctx;
    const { sample_rate: rate, encoding: coding } = message.output_format;
    const encoding: StandInEncoding = coding === 'pcm_mulaw' ? 'mulaw' : 'pcm16';
    context.transcript += message.transcript;
    const last = message.continue !== true;
    const { words, rest } = completeWords(context.transcript);
    context.transcript = last ? '' : rest;
    const all = last ? [...words, ...rest.split(/\s+/).filter(Boolean)] : words;
    for (const word of all) {
      context.chain = context.chain.then(async () => {
        if (context.cut) return;
        const audio = await voice.say(word, rate, encoding);
        if (context.cut) return;
        if (!context.sentAudio) hooks.firstAudioSent?.(performance.now());
        context.sentAudio = true;
        const start = context.seconds;
        context.seconds += audio.seconds;
        send({
          type: 'chunk',
          data: audio.bytes.toString('base64'),
          done: false,
          status_code: 206,
          step_time: 1,
          context_id: id,
        });
        if (message.add_timestamps)
          send({
            type: 'timestamps',
            done: false,
            status_code: 206,
            context_id: id,
            word_timestamps: { words: [word], start: [start], end: [context.seconds] },
          });
      });
    }
    if (last)
      context.chain = context.chain.then(() => {
        contexts.delete(id);
        if (!context.cut) send({ type: 'done', done: true, status_code: 206, context_id: id });
      });
  });
}
