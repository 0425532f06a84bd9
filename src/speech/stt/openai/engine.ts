// STT through an OpenAI-compatible transcription endpoint (POST {base_url}/audio/transcriptions,
// multipart file + model + language). It is not streaming: audio is buffered and sent once per
// utterance on finalize().
import { z } from 'zod';
import { encodeWav } from '../../../audio/wav.ts';
import { FormData, readTextCapped, sendRequest, type Dispatcher } from '../../../net/http.ts';
import { UpstreamError } from '../../../net/upstream-error.ts';
import { Watchdog } from '../../../net/watchdog.ts';
import { realTimers } from '../../../timers.ts';
import type { SttEngine, SttResult, SttStream, SttStreamOptions } from '../../types.ts';
import { SttError } from '../errors.ts';
import { UtteranceBuffer } from '../utterance-buffer.ts';

export const OPENAI_STT_DEFAULTS = {
  model: 'whisper-1',
  timeoutMs: 30_000,
  /** Longest utterance kept (seconds); older audio is dropped first. */
  maxUtteranceSeconds: 600,
  /** Most of a transcript answer read (an error's is read to net/upstream-error.ts's cap). */
  maxResponseBytes: 1024 * 1024,
} as const;

export interface OpenAiSttOptions {
  baseUrl: string;
  apiKey?: string;
  model?: string;
  timeoutMs?: number;
  /** The service's egress-guarded pool (net/http.ts OutboundHttp). */
  dispatcher: Dispatcher;
}

const TranscriptionSchema = z.object({
  text: z.string(),
  words: z.array(z.object({ word: z.string(), start: z.number(), end: z.number() })).optional(),
});

/** "en-US" → "en": the endpoint takes ISO-639-1. */
function isoLanguage(language: string): string {
  return language.split(/[-_]/)[0]?.toLowerCase() ?? language;
}

class OpenAiStream implements SttStream {
  private readonly utterance: UtteranceBuffer;
  /** Seconds of audio pushed before the current utterance: word timings count from stream start. */
  private streamOffset = 0;
  private inflight: AbortController | null = null;
  private closed = false;

  constructor(
    private readonly engine: Required<Omit<OpenAiSttOptions, 'apiKey' | 'dispatcher'>> &
      Pick<OpenAiSttOptions, 'apiKey' | 'dispatcher'>,
    private readonly options: SttStreamOptions,
  ) {
    this.utterance = new UtteranceBuffer(OPENAI_STT_DEFAULTS.maxUtteranceSeconds * options.sampleRate);
  }

  push(samples: Int16Array): void {
    if (this.closed) throw new SttError('STT_STREAM_CLOSED', 'push after close');
    this.streamOffset += this.utterance.push(samples) / this.options.sampleRate;
  }

  async finalize(): Promise<SttResult> {
    if (this.closed) throw new SttError('STT_STREAM_CLOSED', 'finalize after close');
    const samples = this.utterance.take();
    const offset = this.streamOffset;
    this.streamOffset += samples.length / this.options.sampleRate;
    if (samples.length === 0) return { text: '' };
    const result = await this.request(samples, offset);
    this.options.events?.final?.(result);
    return result;
  }

  private async request(samples: Int16Array, offset: number): Promise<SttResult> {
    const controller = new AbortController();
    this.inflight = controller;
    const deadline = new Watchdog(
      realTimers,
      this.options.signal ? AbortSignal.any([controller.signal, this.options.signal]) : controller.signal,
    );
    deadline.arm(this.engine.timeoutMs);
    const form = new FormData();
    const wav = encodeWav({ samples, sampleRate: this.options.sampleRate });
    form.append('file', new Blob([wav], { type: 'audio/wav' }), 'utterance.wav');
    form.append('model', this.engine.model);
    form.append('language', isoLanguage(this.options.language));
    form.append('response_format', 'json');
    if (this.options.phrases?.length) form.append('prompt', this.options.phrases.join(', '));
    const url = `${this.engine.baseUrl.replace(/\/+$/, '')}/audio/transcriptions`;
    let text: string;
    try {
      const response = await sendRequest(url, {
        method: 'POST',
        body: form,
        headers: this.engine.apiKey ? { authorization: `Bearer ${this.engine.apiKey}` } : {},
        signal: deadline.signal,
        dispatcher: this.engine.dispatcher,
        upstreamErrors: true,
      });
      text = await readTextCapped(response.body, OPENAI_STT_DEFAULTS.maxResponseBytes);
    } catch (err) {
      if (controller.signal.aborted || this.options.signal?.aborted)
        throw new SttError('STT_ABORTED', 'transcription cancelled', { cause: err });
      if (err instanceof UpstreamError)
        throw new SttError(
          'STT_HTTP_STATUS',
          `transcription endpoint answered ${err.status}: ${err.detail.slice(0, 200)}`,
          { status: err.status },
        );
      throw new SttError('STT_HTTP_FAILED', `transcription request failed: ${(err as Error).message}`, { cause: err });
    } finally {
      deadline.close();
      if (this.inflight === controller) this.inflight = null;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new SttError('STT_BAD_RESPONSE', 'transcription endpoint answered with invalid JSON', { cause: err });
    }
    const parsed = TranscriptionSchema.safeParse(json);
    if (!parsed.success)
      throw new SttError('STT_BAD_RESPONSE', `unexpected transcription response: ${parsed.error.message}`);
    const words = parsed.data.words?.map((w) => ({ word: w.word, start: offset + w.start, end: offset + w.end }));
    return words ? { text: parsed.data.text.trim(), words } : { text: parsed.data.text.trim() };
  }

  cancel(): void {
    this.streamOffset += this.utterance.clear() / this.options.sampleRate;
    this.inflight?.abort();
  }

  async close(): Promise<void> {
    this.cancel();
    this.closed = true;
  }
}

export class OpenAiSttEngine implements SttEngine {
  readonly name = 'openai';
  private readonly config: Required<Omit<OpenAiSttOptions, 'apiKey' | 'dispatcher'>> &
    Pick<OpenAiSttOptions, 'apiKey' | 'dispatcher'>;

  constructor(options: OpenAiSttOptions) {
    this.config = {
      baseUrl: options.baseUrl,
      apiKey: options.apiKey,
      model: options.model ?? OPENAI_STT_DEFAULTS.model,
      timeoutMs: options.timeoutMs ?? OPENAI_STT_DEFAULTS.timeoutMs,
      dispatcher: options.dispatcher,
    };
  }

  async open(options: SttStreamOptions): Promise<SttStream> {
    options.signal?.throwIfAborted();
    return new OpenAiStream(this.config, options);
  }

  /** Nothing is kept open between requests. */
  async close(): Promise<void> {}
}
