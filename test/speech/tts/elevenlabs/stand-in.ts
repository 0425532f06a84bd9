// A stand-in for ElevenLabs' multi-context stream-input WebSocket: it checks the xi-api-key header,
// reads the documented client messages (zod), speaks each context's words with the embedded voice in
// the output_format asked for (ulaw_8000, pcm_8000, pcm_16000), one audio message per word with its
// character alignment (times relative to that message's audio, as ElevenLabs sends them), and ends a
// flushed, closed context with {"isFinal": true}.
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

const ClientMessageSchema = z.union([
  z.strictObject({ close_socket: z.literal(true) }),
  z.strictObject({ context_id: z.string().min(1), close_context: z.literal(true) }),
  z.strictObject({
    context_id: z.string().min(1),
    text: z.string(),
    flush: z.boolean().optional(),
    voice_settings: z.object({ speed: z.number().min(0.7).max(1.2).optional() }).optional(),
  }),
]);

const FORMATS: Record<string, { rate: number; encoding: StandInEncoding }> = {
  ulaw_8000: { rate: 8000, encoding: 'mulaw' },
  pcm_8000: { rate: 8000, encoding: 'pcm16' },
  pcm_16000: { rate: 16000, encoding: 'pcm16' },
};

interface Context {
  /** Its words so far, with their times. */
  timeline: { word: string; start: number; end: number }[];
  seconds: number;
  buffer: string;
  chain: Promise<void>;
  cut: boolean;
  flushed: boolean;
  sentAudio: boolean;
}

export interface ElevenLabsStandIn extends StandInServer {
  /** Every client message, parsed. */
  readonly messages: z.infer<typeof ClientMessageSchema>[];
  /** Each context's words as spoken, with their start and end (seconds) in its audio, in context order. */
  readonly spoken: { context: string; words: { word: string; start: number; end: number }[] }[];
}

export async function startElevenLabsStandIn(apiKey: string, hooks: StandInHooks = {}): Promise<ElevenLabsStandIn> {
  const voice = new WordVoice();
  const messages: z.infer<typeof ClientMessageSchema>[] = [];
  const spoken: ElevenLabsStandIn['spoken'] = [];
  const server = await startStandIn({
    path: /^\/v1\/text-to-speech\/[^/]+\/multi-stream-input$/,
    authorized: (request) => request.headers['xi-api-key'] === apiKey,
    onConnection(socket, url) {
      const format = FORMATS[url.searchParams.get('output_format') ?? ''];
      if (!format || !url.searchParams.get('model_id')) {
        socket.send(
          JSON.stringify({ error: 'invalid_output_format', message: 'unsupported output_format', code: 1008 }),
        );
        socket.close(1008);
        return;
      }
      serve(socket, format, voice, messages, spoken, hooks);
    },
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
    spoken,
    drop: () => server.drop(),
    async close() {
      await server.close();
      await voice.close();
    },
  };
}

function serve(
  socket: WebSocket,
  format: { rate: number; encoding: StandInEncoding },
  voice: WordVoice,
  messages: z.infer<typeof ClientMessageSchema>[],
  spoken: ElevenLabsStandIn['spoken'],
  hooks: StandInHooks,
): void {
  const contexts = new Map<string, Context>();
  const speak = (id: string, context: Context, words: string[]): void => {
    for (const word of words) {
      context.chain = context.chain.then(async () => {
        if (context.cut || socket.readyState !== socket.OPEN) return;
        const audio = await voice.say(word, format.rate, format.encoding);
        if (context.cut || socket.readyState !== socket.OPEN) return;
        const chars = [...word, ' '];
        const ms = (audio.seconds * 1000) / word.length;
        const alignment = {
          chars,
          charStartTimesMs: chars.map((_, i) => Math.round(Math.min(i, word.length) * ms)),
          charDurationsMs: chars.map((_, i) => (i < word.length ? Math.round(ms) : 0)),
        };
        context.timeline.push({ word, start: context.seconds, end: context.seconds + audio.seconds });
        context.seconds += audio.seconds;
        if (!context.sentAudio) hooks.firstAudioSent?.(performance.now());
        context.sentAudio = true;
        socket.send(
          JSON.stringify({
            audio: audio.bytes.toString('base64'),
            isFinal: null,
            normalizedAlignment: alignment,
            alignment,
            contextId: id,
          }),
        );
      });
    }
  };
  socket.on('message', (data) => {
    let message: z.infer<typeof ClientMessageSchema>;
    try {
      message = ClientMessageSchema.parse(JSON.parse(String(data)));
    } catch {
      socket.send(JSON.stringify({ error: 'invalid_message', message: 'the message does not parse', code: 1008 }));
      socket.close(1008);
      return;
    }
    messages.push(message);
    if ('close_socket' in message) {
      socket.close(1000);
      return;
    }
    let context = contexts.get(message.context_id);
    if (!context) {
      context = {
        timeline: [],
        seconds: 0,
        buffer: '',
        chain: Promise.resolve(),
        cut: false,
        flushed: false,
        sentAudio: false,
      };
      contexts.set(message.context_id, context);
      spoken.push({ context: message.context_id, words: context.timeline });
    }
    const id = message.context_id;
    const ctx = context;
    if ('close_context' in message) {
      contexts.delete(id);
      // "If it has already been set to flush it will continue flushing": else what it held is dropped.
      if (!ctx.flushed) {
        ctx.cut = true;
        return;
      }
      ctx.chain = ctx.chain.then(() => {
        if (socket.readyState === socket.OPEN) socket.send(JSON.stringify({ isFinal: true, contextId: id }));
      });
      return;
    }
    ctx.buffer += message.text;
    const { words, rest } = completeWords(ctx.buffer);
    ctx.buffer = rest;
    speak(id, ctx, words);
    if (message.flush) {
      ctx.flushed = true;
      speak(id, ctx, rest.split(/\s+/).filter(Boolean));
      ctx.buffer = '';
    }
  });
}
