// ElevenLabs as a call's voice: its multi-context stream-input WebSocket, one context per utterance on
// one connection per call. The message shapes relied on, from ElevenLabs' API reference
// (GET /v1/text-to-speech/{voice_id}/multi-stream-input):
//   handshake: header `xi-api-key`; query model_id, output_format (ulaw_8000, pcm_16000, …),
//     inactivity_timeout (seconds, up to 180), sync_alignment
//   out: {"text": "Hello ", "context_id": "c1", "voice_settings": {"speed": 1}}   a context's first text
//        {"text": "more text ", "context_id": "c1"}                                 text should end with a space
//        {"context_id": "c1", "text": "", "flush": true}                            say what is buffered
//        {"context_id": "c1", "close_context": true}                                "if it has already been set to
//                                                                                    flush it will continue flushing"
//        {"close_socket": true}
//   in:  {"audio": "<base64>", "contextId": "c1", "alignment": {"chars": ["H", …], "charStartTimesMs": [0, …],
//         "charDurationsMs": [3, …]}, "normalizedAlignment": {…}}   times "relative to the returned chunk"
//        {"isFinal": true, "contextId": "c1"}                        the context's last message
// The plain stream-input endpoint has one generation per connection, ended only by closing it; a call
// that is cut in on would need a new connection each time, so the multi-context form is used: the
// same messages with a context_id. Word times come from `alignment` (the text as sent, so the words
// match the transcript's), offset by the audio of the context's earlier messages.
import { z } from 'zod';
import { type MediaRate } from '../../../audio/pcm.ts';
import type { OpenWebSocket } from '../../../net/websocket.ts';
import { StreamingVoiceEngine } from '../streaming/session.ts';
import {
  CharacterWords,
  providerError,
  unreadable,
  wireEncodingFor,
  type VoiceWire,
  type WireEncoding,
  type WireEvent,
} from '../streaming/wire.ts';

const ELEVENLABS_DEFAULTS = {
  baseUrl: 'wss://api.elevenlabs.io',
  voiceId: 'JBFqnCBsd6RMkjVDRZzb',
  model: 'eleven_flash_v2_5',
  /** The longest a context may wait for text (ElevenLabs' maximum): a caller's long pause keeps the voice. */
  inactivityTimeoutS: 180,
} as const;

const AlignmentSchema = z.object({
  chars: z.array(z.string()),
  charStartTimesMs: z.array(z.number()),
  // The reference names it charDurationsMs; some of its examples charsDurationsMs.
  charDurationsMs: z.array(z.number()).optional(),
  charsDurationsMs: z.array(z.number()).optional(),
});

const ElevenLabsAudioSchema = z.object({
  audio: z.string().nullable(),
  contextId: z.string().optional(),
  alignment: AlignmentSchema.nullable().optional(),
  normalizedAlignment: AlignmentSchema.nullable().optional(),
  isFinal: z.boolean().nullable().optional(),
});

const ElevenLabsFinalSchema = z.object({
  isFinal: z.literal(true),
  contextId: z.string().optional(),
});

/** An error on the socket: `{"message": "...", "error": "max_active_conversations", "code": 1008}`. */
const ElevenLabsErrorSchema = z.object({
  error: z.string(),
  message: z.string().optional(),
  code: z.union([z.number(), z.string()]).optional(),
  contextId: z.string().optional(),
});

export const ElevenLabsMessageSchema = z.union([ElevenLabsFinalSchema, ElevenLabsAudioSchema, ElevenLabsErrorSchema]);

interface ElevenLabsOptions {
  apiKey: string;
  baseUrl?: string | undefined;
  voiceId?: string | undefined;
  model?: string | undefined;
  speed?: number | undefined;
  openWebSocket: OpenWebSocket;
}

function outputFormat(encoding: WireEncoding, rate: MediaRate): string {
  return encoding === 'mulaw' ? 'ulaw_8000' : `pcm_${rate}`;
}

export class ElevenLabsWire implements VoiceWire {
  readonly provider = 'elevenlabs';
  readonly timesWords = true;
  readonly encoding: WireEncoding;
  readonly url: string;
  readonly headers: Record<string, string>;
  private readonly bytesPerSecond: number;
  /** Per context: the audio seconds before the current message, and its words in progress. */
  private readonly contexts = new Map<string, { seconds: number; words: CharacterWords }>();

  constructor(
    private readonly o: Omit<ElevenLabsOptions, 'openWebSocket'>,
    rate: MediaRate,
  ) {
    this.encoding = wireEncodingFor(rate);
    this.bytesPerSecond = this.encoding === 'mulaw' ? rate : rate * 2;
    const base = (o.baseUrl ?? ELEVENLABS_DEFAULTS.baseUrl).replace(/\/+$/, '');
    const voice = encodeURIComponent(o.voiceId ?? ELEVENLABS_DEFAULTS.voiceId);
    const query = new URLSearchParams({
      model_id: o.model ?? ELEVENLABS_DEFAULTS.model,
      output_format: outputFormat(this.encoding, rate),
      inactivity_timeout: String(ELEVENLABS_DEFAULTS.inactivityTimeoutS),
      sync_alignment: 'true',
    });
    this.url = `${base}/v1/text-to-speech/${voice}/multi-stream-input?${query.toString()}`;
    this.headers = { 'xi-api-key': o.apiKey };
  }

  opening(): string[] {
    return [];
  }

  text(context: string, text: string, first: boolean): string[] {
    const spaced = /\s$/.test(text) ? text : `${text} `;
    if (!first) return [JSON.stringify({ text: spaced, context_id: context })];
    this.contexts.set(context, { seconds: 0, words: new CharacterWords() });
    return [
      JSON.stringify({
        text: spaced,
        context_id: context,
        voice_settings: { speed: Math.min(1.2, Math.max(0.7, this.o.speed ?? 1)) },
      }),
    ];
  }

  end(context: string): string[] {
    return [
      JSON.stringify({ context_id: context, text: '', flush: true }),
      JSON.stringify({ context_id: context, close_context: true }),
    ];
  }

  cancel(context: string): string[] {
    this.contexts.delete(context);
    return [JSON.stringify({ context_id: context, close_context: true })];
  }

  closing(): string[] {
    return [JSON.stringify({ close_socket: true })];
  }

  read(data: Buffer, binary: boolean): WireEvent[] {
    if (binary) throw unreadable(this.provider);
    let parsed: z.infer<typeof ElevenLabsMessageSchema>;
    try {
      parsed = ElevenLabsMessageSchema.parse(JSON.parse(data.toString('utf8')));
    } catch {
      throw unreadable(this.provider);
    }
    const context = parsed.contextId ?? null;
    const state = context === null ? undefined : this.contexts.get(context);
    if ('error' in parsed) return [{ type: 'error', context, error: providerError(this.provider, parsed.error) }];
    const events: WireEvent[] = [];
    if ('audio' in parsed && parsed.audio) {
      const bytes = Buffer.from(parsed.audio, 'base64');
      const offsetMs = (state?.seconds ?? 0) * 1000;
      const alignment = parsed.alignment;
      if (state && alignment) {
        const durations = alignment.charDurationsMs ?? alignment.charsDurationsMs ?? [];
        const words = state.words.push(
          alignment.chars,
          alignment.charStartTimesMs.map((ms) => ms + offsetMs),
          durations,
        );
        if (words.length > 0) events.push({ type: 'words', context, words });
      }
      if (state) state.seconds += bytes.length / this.bytesPerSecond;
      events.push({ type: 'audio', context, bytes });
    }
    if (parsed.isFinal === true) {
      const last = state?.words.flush() ?? [];
      if (last.length > 0) events.push({ type: 'words', context, words: last });
      if (context !== null) this.contexts.delete(context);
      events.push({ type: 'done', context });
    }
    return events;
  }
}

export class ElevenLabsTtsEngine extends StreamingVoiceEngine<ElevenLabsOptions> {
  readonly name = 'elevenlabs';

  protected wire(settings: Omit<ElevenLabsOptions, 'openWebSocket'>, rate: MediaRate): ElevenLabsWire {
    return new ElevenLabsWire(settings, rate);
  }
}
