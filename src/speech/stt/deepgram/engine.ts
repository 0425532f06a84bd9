// Deepgram's live recogniser as an agent's stt.engine "deepgram": one WebSocket per call stream
// (protocol.ts gives the messages), opened through the egress policy's opener and closed with the
// call. The caller's audio goes out as the line carried it: μ-law at 8 kHz from a phone line
// (encoding=mulaw), PCM16 at the line's rate otherwise (encoding=linear16), never resampled.
// Interim results are the partials; is_final spans make the utterance, Finalize settles it at the
// end of the turn; speech_final and UtteranceEnd are handed to the call's end-of-turn policy as
// one more input, never as the decision. stt.phrases become keyterms (nova-3) or keywords.
//
// Deepgram's own SDK is not used: it opens its sockets itself (its own `ws` import inside a
// reconnecting wrapper) with no way to hand it an opened socket, so the egress policy could not
// hold; and it is not a dependency. The protocol is small: ws + the zod schemas in protocol.ts.
import type { OpenWebSocket } from '../../../net/websocket.ts';
import { realTimers, type TimerHandle, type Timers } from '../../../timers.ts';
import type { SttEngine, SttResult, SttStream, SttStreamOptions } from '../../types.ts';
import { lineBytes, openRecogniserSocket } from '../provider-socket.ts';
import { STREAMING_STT_DEFAULTS, StreamingSttStream, type StreamingStreamSettings } from '../streaming-stream.ts';
import { DEEPGRAM_READ_TYPES, DeepgramMessageSchema, type DeepgramMessage } from './protocol.ts';

const DEEPGRAM_DEFAULTS = {
  baseUrl: 'wss://api.deepgram.com',
  model: 'nova-3',
  /** Silence (ms) after which Deepgram marks speech_final: a pause, not yet the end of a turn. */
  endpointingMs: 300,
  /** Gap after the last word (ms) for UtteranceEnd; Deepgram recommends 1000 or more. */
  utteranceEndMs: 1000,
  /** Without audio, a KeepAlive this often (Deepgram closes a stream silent for 10 s). */
  keepAliveMs: 4_000,
} as const;

interface DeepgramEngineOptions {
  apiKey?: string | undefined;
  baseUrl?: string | undefined;
  model?: string | undefined;
  openWebSocket?: OpenWebSocket | undefined;
  timers?: Timers;
  finalGraceMs?: number;
  keepAliveMs?: number;
}

/** The listen URL for one stream. */
function deepgramListenUrl(
  baseUrl: string,
  model: string,
  options: Pick<SttStreamOptions, 'sampleRate' | 'language' | 'phrases' | 'lineEncoding'>,
): string {
  const url = new URL(`${baseUrl.replace(/\/+$/, '')}/v1/listen`);
  const q = url.searchParams;
  q.set('model', model);
  q.set('language', options.language);
  q.set('encoding', options.lineEncoding === 'mulaw' ? 'mulaw' : 'linear16');
  q.set('sample_rate', String(options.sampleRate));
  q.set('channels', '1');
  q.set('interim_results', 'true');
  q.set('endpointing', String(DEEPGRAM_DEFAULTS.endpointingMs));
  q.set('utterance_end_ms', String(DEEPGRAM_DEFAULTS.utteranceEndMs));
  q.set('punctuate', 'true');
  // Keyterm prompting is nova-3's; older models take keywords.
  const bias = model.startsWith('nova-3') ? 'keyterm' : 'keywords';
  for (const phrase of options.phrases ?? []) q.append(bias, phrase);
  return url.toString();
}

const resultOf = (message: Extract<DeepgramMessage, { type: 'Results' }>): SttResult => {
  const best = message.channel.alternatives[0];
  if (!best) return { text: '' };
  const words = best.words.map((w) => ({ word: w.punctuated_word ?? w.word, start: w.start, end: w.end }));
  return words.length > 0 ? { text: best.transcript, words } : { text: best.transcript };
};

class DeepgramStream extends StreamingSttStream {
  private readonly encoding: 'mulaw' | 'linear16';
  private keepAlive: TimerHandle | undefined;

  constructor(
    settings: StreamingStreamSettings,
    private readonly keepAliveMs: number,
  ) {
    super(settings);
    this.encoding = settings.options.lineEncoding ?? 'linear16';
    this.armKeepAlive();
  }

  protected sendAudio(samples: Int16Array): void {
    this.send(lineBytes(samples, this.encoding));
    this.armKeepAlive();
  }

  protected settleMessage(): string {
    return JSON.stringify({ type: 'Finalize' });
  }

  protected goodbye(): void {
    this.send(JSON.stringify({ type: 'CloseStream' }));
  }

  override async close(): Promise<void> {
    this.timers.clearTimeout(this.keepAlive);
    await super.close();
  }

  protected message(text: string): void {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return this.heardMalformed('message');
    }
    const type = (json as { type?: unknown } | null)?.type;
    if (typeof type !== 'string' || !DEEPGRAM_READ_TYPES.includes(type)) return;
    const parsed = DeepgramMessageSchema.safeParse(json);
    if (!parsed.success) return this.heardMalformed(`${type} message`);
    const message = parsed.data;
    if (message.type === 'UtteranceEnd') return this.heardTurnEnd(null);
    if (message.type !== 'Results') return;
    const result = resultOf(message);
    if (message.is_final) this.heardSettled(result);
    else this.heardGuess(result);
    if (message.speech_final) this.heardTurnEnd(null);
    if (message.from_finalize) this.heardSettledAll();
  }

  /** A KeepAlive after keepAliveMs without audio, again and again. */
  private armKeepAlive(): void {
    const timers = this.timers;
    timers.clearTimeout(this.keepAlive);
    this.keepAlive = timers.setTimeout(() => {
      this.send(JSON.stringify({ type: 'KeepAlive' }));
      this.armKeepAlive();
    }, this.keepAliveMs);
  }
}

export class DeepgramSttEngine implements SttEngine {
  readonly name = 'deepgram';

  constructor(private readonly config: DeepgramEngineOptions) {}

  async open(options: SttStreamOptions): Promise<SttStream> {
    const socket = await openRecogniserSocket('deepgram', this.config, options, (apiKey) => ({
      url: deepgramListenUrl(
        this.config.baseUrl ?? DEEPGRAM_DEFAULTS.baseUrl,
        this.config.model ?? DEEPGRAM_DEFAULTS.model,
        options,
      ),
      headers: { authorization: `Token ${apiKey}` },
    }));
    return new DeepgramStream(
      {
        provider: 'deepgram',
        socket,
        options,
        timers: this.config.timers ?? realTimers,
        finalGraceMs: this.config.finalGraceMs ?? STREAMING_STT_DEFAULTS.finalGraceMs,
      },
      this.config.keepAliveMs ?? DEEPGRAM_DEFAULTS.keepAliveMs,
    );
  }

  /** Streams close with their calls; the engine keeps nothing open. */
  async close(): Promise<void> {}
}
