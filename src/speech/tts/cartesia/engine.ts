// Cartesia as a call's voice: its TTS WebSocket with one context per utterance, text added to the
// context (continue: true) as the model streams it. The message shapes relied on, from Cartesia's API
// reference (WebSocket /tts/websocket) and its contexts guide:
//   handshake: headers `X-API-Key` and `Cartesia-Version`
//   out: {"model_id": "sonic-2", "transcript": "Hello, ", "voice": {"mode": "id", "id": "a0e9…"}, "language": "en",
//         "context_id": "c1", "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 8000},
//         "add_timestamps": true, "continue": true}
//        "Inputs on the same context must keep all fields except transcript, continue, and duration the same";
//        "transcripts are concatenated verbatim" (so each piece ends with its space); to finish a context whose
//        last words were already sent, "send an input with an empty transcript and continue set to false"
//        {"context_id": "c1", "cancel": true}
//   in:  {"type": "chunk", "data": "<base64>", "done": false, "status_code": 206, "step_time": 123, "context_id": "c1"}
//        {"type": "timestamps", "done": false, "status_code": 206, "context_id": "c1",
//         "word_timestamps": {"words": ["Hello", "world"], "start": [0, 0.5], "end": [0.4, 0.9]}}
//        {"type": "done", "done": true, "status_code": 206, "context_id": "c1"}
//        {"type": "flush_done", …}, {"type": "phoneme_timestamps", …}   not used
//        {"type": "error", "done": true, "title": "…", "message": "…", "error_code": "model_not_found",
//         "status_code": 400, "context_id": "c1"}   (older versions: "error": "…")
//   speed (its "Volume, Speed, and Emotion" guide): {"generation_config": {"speed": 1.2}}, "ranging from 0.6 to 1.5",
//        "only for sonic-3 and have no effect on earlier models"; sent only when the agent's speed is not 1
// Encodings: pcm_mulaw at 8 kHz for a phone line, pcm_s16le at 16 kHz otherwise. Word times are seconds
// from the start of the context's audio.
import { z } from 'zod';
import type { MediaRate } from '../../../audio/pcm.ts';
import type { OpenWebSocket } from '../../../net/websocket.ts';
import { StreamingVoiceEngine } from '../streaming/session.ts';
import {
  providerError,
  unreadable,
  wireEncodingFor,
  type VoiceWire,
  type WireEncoding,
  type WireEvent,
} from '../streaming/wire.ts';

const CARTESIA_DEFAULTS = {
  baseUrl: 'wss://api.cartesia.ai',
  voiceId: 'a0e99841-438c-4a64-b679-ae501e7d6091',
  model: 'sonic-2',
  version: '2025-04-16',
  language: 'en',
} as const;

const base = { context_id: z.string().optional(), status_code: z.number().optional(), done: z.boolean().optional() };

const CartesiaChunkSchema = z.object({ type: z.literal('chunk'), data: z.string(), ...base });
const CartesiaTimestampsSchema = z.object({
  type: z.literal('timestamps'),
  word_timestamps: z.object({ words: z.array(z.string()), start: z.array(z.number()), end: z.array(z.number()) }),
  ...base,
});
const CartesiaDoneSchema = z.object({ type: z.literal('done'), ...base });
const CartesiaErrorSchema = z.object({
  type: z.literal('error'),
  error_code: z.string().optional(),
  title: z.string().optional(),
  message: z.string().optional(),
  error: z.string().optional(),
  ...base,
});
/** Messages this voice does not use (flush_done, phoneme_timestamps, and any a later version adds). */
const CartesiaOtherSchema = z.object({ type: z.string(), ...base });

export const CartesiaMessageSchema = z.union([
  CartesiaChunkSchema,
  CartesiaTimestampsSchema,
  CartesiaDoneSchema,
  CartesiaErrorSchema,
  CartesiaOtherSchema,
]);

interface CartesiaOptions {
  apiKey: string;
  baseUrl?: string | undefined;
  voiceId?: string | undefined;
  model?: string | undefined;
  language?: string | undefined;
  /** The agent's voice speed (1: the voice's own pace); Cartesia takes 0.6-1.5. */
  speed?: number | undefined;
  openWebSocket: OpenWebSocket;
}

/** Cartesia's range for generation_config.speed. */
const CARTESIA_SPEED = { min: 0.6, max: 1.5 } as const;

export class CartesiaWire implements VoiceWire {
  readonly provider = 'cartesia';
  readonly timesWords = true;
  readonly encoding: WireEncoding;
  readonly url: string;
  readonly headers: Record<string, string>;
  private readonly request: Record<string, unknown>;

  constructor(o: Omit<CartesiaOptions, 'openWebSocket'>, rate: MediaRate) {
    this.encoding = wireEncodingFor(rate);
    this.url = `${(o.baseUrl ?? CARTESIA_DEFAULTS.baseUrl).replace(/\/+$/, '')}/tts/websocket`;
    this.headers = { 'X-API-Key': o.apiKey, 'Cartesia-Version': CARTESIA_DEFAULTS.version };
    this.request = {
      model_id: o.model ?? CARTESIA_DEFAULTS.model,
      voice: { mode: 'id', id: o.voiceId ?? CARTESIA_DEFAULTS.voiceId },
      language: o.language ?? CARTESIA_DEFAULTS.language,
      output_format: {
        container: 'raw',
        encoding: this.encoding === 'mulaw' ? 'pcm_mulaw' : 'pcm_s16le',
        sample_rate: rate,
      },
      add_timestamps: true,
      ...(o.speed !== undefined && o.speed !== 1
        ? { generation_config: { speed: Math.min(CARTESIA_SPEED.max, Math.max(CARTESIA_SPEED.min, o.speed)) } }
        : {}),
    };
  }

  opening(): string[] {
    return [];
  }

  text(context: string, text: string): string[] {
    const transcript = /\s$/.test(text) ? text : `${text} `;
    return [JSON.stringify({ ...this.request, context_id: context, transcript, continue: true })];
  }

  end(context: string): string[] {
    return [JSON.stringify({ ...this.request, context_id: context, transcript: '', continue: false })];
  }

  cancel(context: string): string[] {
    return [JSON.stringify({ context_id: context, cancel: true })];
  }

  closing(): string[] {
    return [];
  }

  read(data: Buffer, binary: boolean): WireEvent[] {
    if (binary) throw unreadable(this.provider);
    let parsed: z.infer<typeof CartesiaMessageSchema>;
    try {
      parsed = CartesiaMessageSchema.parse(JSON.parse(data.toString('utf8')));
    } catch {
      throw unreadable(this.provider);
    }
    const context = parsed.context_id ?? null;
    const chunk = CartesiaChunkSchema.safeParse(parsed);
    if (chunk.success) return [{ type: 'audio', context, bytes: Buffer.from(chunk.data.data, 'base64') }];
    const stamps = CartesiaTimestampsSchema.safeParse(parsed);
    if (stamps.success) {
      const { words, start, end } = stamps.data.word_timestamps;
      return [
        {
          type: 'words',
          context,
          words: words.map((word, i) => ({ word, start: start[i] ?? 0, end: end[i] ?? start[i] ?? 0 })),
        },
      ];
    }
    const error = CartesiaErrorSchema.safeParse(parsed);
    if (error.success) {
      const code = error.data.error_code ?? 'unknown';
      return [{ type: 'error', context, error: providerError(this.provider, code, error.data.status_code) }];
    }
    if (parsed.type === 'done') return [{ type: 'done', context }];
    return [];
  }
}

export class CartesiaTtsEngine extends StreamingVoiceEngine<CartesiaOptions> {
  readonly name = 'cartesia';

  protected wire(settings: Omit<CartesiaOptions, 'openWebSocket'>, rate: MediaRate): CartesiaWire {
    return new CartesiaWire(settings, rate);
  }
}
