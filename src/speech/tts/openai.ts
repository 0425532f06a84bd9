// An OpenAI-compatible speech endpoint: POST {base_url}/audio/speech with
// {model, input, voice, response_format, speed} and a bearer key; the body is streamed as it
// arrives. "pcm" is raw PCM16 mono little-endian at the endpoint's fixed rate (24 kHz for
// OpenAI); "wav" carries its rate in the header.
import { z } from 'zod';
import { bytesToInt16 } from '../../audio/pcm.ts';
import { WavStreamReader } from '../../audio/wav-stream.ts';
import { readTextCapped, sendRequest, type Dispatcher, type HttpResponse, type ResponseBody } from '../../net/http.ts';
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

const ErrorBodySchema = z.object({ error: z.union([z.string(), z.object({ message: z.string() })]) });

/** How much of an error answer is read for its message. */
const ERROR_BODY_BYTES = 8192;

async function errorMessage(body: ResponseBody): Promise<string> {
  const text = await readTextCapped(body, ERROR_BODY_BYTES).catch(() => '');
  try {
    const body = ErrorBodySchema.parse(JSON.parse(text));
    return typeof body.error === 'string' ? body.error : body.error.message;
  } catch {
    return text.slice(0, 300);
  }
}

/** Aborts when armed for longer than `ms`: a server that stops sending must not hold a call's voice. */
class StallWatch {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  readonly signal = this.controller.signal;

  constructor(readonly ms: number) {
    this.arm();
  }

  get fired(): boolean {
    return this.signal.aborted;
  }

  arm(): void {
    this.disarm();
    this.timer = setTimeout(() => this.controller.abort(), this.ms);
  }

  disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

export class OpenAiTtsEngine implements TtsEngine {
  readonly name = 'openai';
  private readonly options: z.output<typeof OpenAiTtsOptionsSchema>;

  /** `dispatcher`: the service's egress-guarded pool; the shared unguarded one otherwise (tests, tools). */
  constructor(
    options: OpenAiTtsOptions,
    private readonly dispatcher?: Dispatcher,
  ) {
    const parsed = OpenAiTtsOptionsSchema.safeParse(options);
    if (!parsed.success) throw new SpeechError('TTS_CONFIG_INVALID', `OpenAI speech config: ${z.prettifyError(parsed.error)}`);
    this.options = parsed.data;
  }

  async *synthesize(text: string, options: TtsSynthesisOptions): AsyncIterable<PcmChunk> {
    const { signal } = options;
    const input = text.trim();
    if (input === '' || signal?.aborted) return;
    const stall = new StallWatch(this.options.stallTimeoutMs);
    try {
      yield* this.request(input, options, stall, signal ? AbortSignal.any([signal, stall.signal]) : stall.signal);
    } finally {
      stall.disarm();
    }
  }

  private async *request(input: string, options: TtsSynthesisOptions, stall: StallWatch, signal: AbortSignal): AsyncIterable<PcmChunk> {
    const { baseUrl, apiKey, model, responseFormat, pcmSampleRate, maxPieceSeconds } = this.options;
    // Stopped by the caller: end quietly. Stopped by the stall watch: that is the server's fault.
    const stopped = (): boolean => {
      if (stall.fired) throw new SpeechError('TTS_BAD_RESPONSE', `speech endpoint sent nothing for ${stall.ms} ms`);
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
        ...(this.dispatcher ? { dispatcher: this.dispatcher } : {}),
      });
    } catch (error) {
      if (stopped()) return;
      throw new SpeechError('TTS_HTTP_ERROR', `speech endpoint ${url} unreachable: ${(error as Error).message}`, { cause: error });
    }
    const body = response.body;
    try {
      if (response.statusCode < 200 || response.statusCode > 299) {
        throw new SpeechError('TTS_HTTP_ERROR', `speech endpoint answered ${response.statusCode}: ${await errorMessage(body)}`);
      }
      const reader = responseFormat === 'wav' ? new WavStreamReader() : null;
      const output = new PcmOutput(options.sampleRate, { trimLeadIn: options.trimLeadIn ?? false });
      // Raw PCM may split a sample across reads; keep the odd byte for the next read.
      let odd: Uint8Array | null = null;
      let seconds = 0;
      const reads = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
      for (;;) {
        if (stopped()) return;
        let read: IteratorResult<Buffer>;
        stall.arm();
        try {
          read = await reads.next();
        } catch (error) {
          if (stopped()) return;
          throw new SpeechError('TTS_BAD_RESPONSE', `speech body broke off: ${(error as Error).message}`, { cause: error });
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
            throw new SpeechError('TTS_BAD_RESPONSE', `speech body is not PCM16 mono WAV: ${(error as Error).message}`, { cause: error });
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
        if (seconds > maxPieceSeconds) throw new SpeechError('TTS_BAD_RESPONSE', `speech endpoint sent over ${maxPieceSeconds} s of audio for one piece of text`);
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
