// Deepgram Aura as a call's voice: its streaming text-to-speech WebSocket (GET /v1/speak), one
// connection per call; utterances follow one another on it. The message shapes relied on, from
// Deepgram's API reference and its Flush and Clear pages:
//   handshake: header `Authorization: Token <key>`; query model (aura-2-thalia-en, …), encoding
//     (linear16, mulaw, alaw), sample_rate
//   out: {"type": "Speak", "text": "Hello"}   {"type": "Flush"}   {"type": "Clear"}   {"type": "Close"}
//   in:  binary frames of audio in the encoding asked for
//        {"type": "Metadata", "request_id": "…", "model_name": "…", "model_version": "…", "model_uuid": "…"}
//        {"type": "Flushed", "sequence_id": 0}   "the server will process all remaining text data and return the
//                                                final audio results" — the end of an utterance's audio
//        {"type": "Cleared", "sequence_id": 0}   after a Clear: audio until then belongs to the utterance cut
//        {"type": "Warning", "description": "…", "code": "…"}
// "The maximum number of times you can send the Flush message is 20 times every 60 seconds", so an
// utterance is flushed once, at its end (not per sentence). Aura reports no word times: the call
// estimates the words heard from the audio length, as for the embedded voices.
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

const DEEPGRAM_DEFAULTS = {
  baseUrl: 'wss://api.deepgram.com',
  model: 'aura-2-thalia-en',
} as const;

const DeepgramMetadataSchema = z.object({
  type: z.literal('Metadata'),
  request_id: z.string(),
  model_name: z.string().optional(),
  model_version: z.string().optional(),
  model_uuid: z.string().optional(),
});
const DeepgramFlushedSchema = z.object({ type: z.literal('Flushed'), sequence_id: z.number() });
const DeepgramClearedSchema = z.object({ type: z.literal('Cleared'), sequence_id: z.number() });
const DeepgramWarningSchema = z.object({
  type: z.literal('Warning'),
  description: z.string().optional(),
  code: z.string().optional(),
});
const DeepgramErrorSchema = z.object({
  type: z.literal('Error'),
  description: z.string().optional(),
  code: z.string().optional(),
  err_code: z.string().optional(),
});

export const DeepgramMessageSchema = z.discriminatedUnion('type', [
  DeepgramMetadataSchema,
  DeepgramFlushedSchema,
  DeepgramClearedSchema,
  DeepgramWarningSchema,
  DeepgramErrorSchema,
]);

interface DeepgramOptions {
  apiKey: string;
  baseUrl?: string | undefined;
  model?: string | undefined;
  openWebSocket: OpenWebSocket;
}

export class DeepgramWire implements VoiceWire {
  readonly provider = 'deepgram';
  readonly timesWords = false;
  readonly encoding: WireEncoding;
  readonly url: string;
  readonly headers: Record<string, string>;
  /** Clears sent and not yet answered: audio meanwhile is the cut utterance's, and is dropped. */
  private clearing = 0;
  /** The utterance flushed and waiting for its Flushed. */
  private flushed: string | null = null;

  constructor(o: Omit<DeepgramOptions, 'openWebSocket'>, rate: MediaRate) {
    this.encoding = wireEncodingFor(rate);
    const query = new URLSearchParams({
      model: o.model ?? DEEPGRAM_DEFAULTS.model,
      encoding: this.encoding === 'mulaw' ? 'mulaw' : 'linear16',
      sample_rate: String(rate),
    });
    this.url = `${(o.baseUrl ?? DEEPGRAM_DEFAULTS.baseUrl).replace(/\/+$/, '')}/v1/speak?${query.toString()}`;
    this.headers = { Authorization: `Token ${o.apiKey}` };
  }

  opening(): string[] {
    return [];
  }

  text(_context: string, text: string): string[] {
    return [JSON.stringify({ type: 'Speak', text: /\s$/.test(text) ? text : `${text} ` })];
  }

  end(context: string): string[] {
    this.flushed = context;
    return [JSON.stringify({ type: 'Flush' })];
  }

  cancel(context: string): string[] {
    if (this.flushed === context) this.flushed = null;
    this.clearing++;
    return [JSON.stringify({ type: 'Clear' })];
  }

  closing(): string[] {
    return [JSON.stringify({ type: 'Close' })];
  }

  read(data: Buffer, binary: boolean): WireEvent[] {
    if (binary) return this.clearing > 0 ? [] : [{ type: 'audio', context: null, bytes: data }];
    let parsed: z.infer<typeof DeepgramMessageSchema>;
    try {
      parsed = DeepgramMessageSchema.parse(JSON.parse(data.toString('utf8')));
    } catch {
      throw unreadable(this.provider);
    }
    switch (parsed.type) {
      case 'Cleared':
        this.clearing = Math.max(0, this.clearing - 1);
        return [];
      case 'Flushed': {
        // A flush the cut utterance sent before its Clear is answered too: only the one waited for ends an utterance.
        if (this.clearing > 0 || this.flushed === null) return [];
        const context = this.flushed;
        this.flushed = null;
        return [{ type: 'done', context }];
      }
      case 'Error':
        return [{ type: 'error', context: null, error: providerError(this.provider, parsed.err_code ?? parsed.code) }];
      case 'Metadata':
      case 'Warning':
        return [];
    }
  }
}

export class DeepgramTtsEngine extends StreamingVoiceEngine<DeepgramOptions> {
  readonly name = 'deepgram';

  protected wire(settings: Omit<DeepgramOptions, 'openWebSocket'>, rate: MediaRate): DeepgramWire {
    return new DeepgramWire(settings, rate);
  }
}
