// An OpenAI-compatible speech endpoint: POST {base_url}/audio/speech with
// {model, input, voice, response_format, speed} and a bearer key; the body is streamed as it
// arrives. "pcm" is raw PCM16 mono little-endian at the endpoint's fixed rate (24 kHz for
// OpenAI); "wav" carries its rate in the header.
import { z } from 'zod';
import { bytesToInt16 } from '../../audio/pcm.ts';
import { WavStreamReader } from '../../audio/wav-stream.ts';
import { sendRequest, type Dispatcher, type HttpResponse } from '../../net/http.ts';
import { UpstreamError } from '../../net/upstream-error.ts';
import { Watchdog } from '../../net/watchdog.ts';
import { realTimers } from '../../timers.ts';
import { SpeechError } from '../errors.ts';
import type { PcmChunk, TtsEngine, TtsSynthesisOptions } from '../types.ts';
import { PcmOutput } from './output.ts';

export const OpenAiTtsOptionsSchema = z.strictObject({
  baseUrl: z.url({ protocol: /^https?$/ }),
  apiKey: z.string().min(1).optional(),
  model: z.string().min(1).default('tts-1'),
  voice: z.string().min(1).default('alloy'),
  speed: z.number().min(0.25).max(4).default(1),
  responseFormat: z.enum(['pcm', 'wav']).default('pcm'),
  /** Rate of raw "pcm" bodies; OpenAI sends 24 kHz. */
  pcmSampleRate: z.int().positive().default(24000),
  /** A server silent this long (before its answer or between reads) is given up. */
  stallTimeoutMs: z.int().positive().default(10_000),
  /** Audio one piece of text may come to: a sentence is seconds long, so more is a server gone wrong. */
  maxPieceSeconds: z.number().positive().default(120),
});
export type OpenAiTtsOptions = z.input<typeof OpenAiTtsOptionsSchema>;

export class OpenAiTtsEngine implements TtsEngine {
  readonly name = 'openai';
  private readonly options: z.output<typeof OpenAiTtsOptionsSchema>;

  /** `dispatcher`: the service's egress-guarded pool (net/http.ts OutboundHttp). */
  constructor(
    options: OpenAiTtsOptions,
    private readonly dispatcher: Dispatcher,
  ) {
    const parsed = OpenAiTtsOptionsSchema.safeParse(options);
    if (!parsed.success)
      throw new SpeechError('TTS_CONFIG_INVALID', `OpenAI speech config: ${z.prettifyError(parsed.error)}`);
    this.options = parsed.data;
  }

  async *synthesize(text: string, options: TtsSynthesisOptions): AsyncIterable<PcmChunk> {
    const { signal } = options;
    const input = text.trim();
    if (input === '' || signal?.aborted) return;
    // A server silent this long, before its answer or between reads (never while the call holds a chunk), is given up.
    const stall = new Watchdog(realTimers, signal);
    stall.arm(this.options.stallTimeoutMs);
    try {
      yield* this.request(input, options, stall);
    } finally {
      stall.close();
    }
  }

  private async *request(input: string, options: TtsSynthesisOptions, stall: Watchdog): AsyncIterable<PcmChunk> {
    const { baseUrl, apiKey, model, responseFormat, pcmSampleRate, maxPieceSeconds, stallTimeoutMs } = this.options;
    const signal = stall.signal;
    // Stopped by the caller: end quietly. Stopped by the stall watch: that is the server's fault.
    const stopped = (): boolean => {
      if (stall.expired)
        throw new SpeechError('TTS_BAD_RESPONSE', `speech endpoint sent nothing for ${stallTimeoutMs} ms`);
      return signal.aborted;
    };
    const url = `${baseUrl.replace(/\/+$/, '')}/audio/speech`;
    let response: HttpResponse;
    try {
      response = await sendRequest(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
        body: JSON.stringify({
          model,
          input,
          voice: options.voiceId ?? this.options.voice,
          response_format: responseFormat,
          speed: options.speed ?? this.options.speed,
        }),
        signal,
        dispatcher: this.dispatcher,
        upstreamErrors: true,
      });
    } catch (error) {
      if (stopped()) return;
      if (error instanceof UpstreamError)
        throw new SpeechError('TTS_HTTP_ERROR', `speech endpoint answered ${error.status}: ${error.detail}`);
      throw new SpeechError('TTS_HTTP_ERROR', `speech endpoint ${url} unreachable: ${(error as Error).message}`, {
        cause: error,
      });
    }
    const body = response.body;
    try {
      const reader = responseFormat === 'wav' ? new WavStreamReader() : null;
      const output = new PcmOutput(options.sampleRate, { trimLeadIn: options.trimLeadIn ?? false });
      // Raw PCM may split a sample across reads; keep the odd byte for the next read.
      let odd: Uint8Array | null = null;
      let seconds = 0;
      const reads = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
      for (;;) {
        if (stopped()) return;
        let read: IteratorResult<Buffer>;
        stall.arm(stallTimeoutMs);
        try {
          read = await reads.next();
        } catch (error) {
          if (stopped()) return;
          throw new SpeechError('TTS_BAD_RESPONSE', `speech body broke off: ${(error as Error).message}`, {
            cause: error,
          });
        } finally {
          stall.disarm();
        }
        if (read.done) break;
        if (stopped()) return;
        let samples: Int16Array;
        if (reader) {
          try {
            samples = reader.push(read.value);
          } catch (error) {
            throw new SpeechError(
              'TTS_BAD_RESPONSE',
              `speech body is not PCM16 mono WAV: ${(error as Error).message}`,
              { cause: error },
            );
          }
        } else {
          let bytes: Uint8Array = read.value;
          if (odd) {
            const joined = new Uint8Array(odd.length + bytes.length);
            joined.set(odd);
            joined.set(bytes, odd.length);
            bytes = joined;
            odd = null;
          }
          if (bytes.length % 2 === 1) {
            odd = bytes.slice(bytes.length - 1);
            bytes = bytes.subarray(0, bytes.length - 1);
          }
          samples = bytesToInt16(bytes);
        }
        if (samples.length === 0) continue;
        const rate = reader ? reader.sampleRate : pcmSampleRate;
        seconds += samples.length / rate;
        if (seconds > maxPieceSeconds)
          throw new SpeechError(
            'TTS_BAD_RESPONSE',
            `speech endpoint sent over ${maxPieceSeconds} s of audio for one piece of text`,
          );
        for (const chunk of output.push(samples, rate)) {
          if (stopped()) return;
          yield chunk;
        }
      }
      for (const chunk of output.end()) {
        if (stopped()) return;
        yield chunk;
      }
    } finally {
      // Stopped early (cancel, error): the connection is dropped rather than read to its end.
      if (!body.destroyed) body.destroy();
    }
  }

  async close(): Promise<void> {
    // Nothing kept open: each synthesis is one request.
  }
}
