// The line's audio in and out of a speech-to-speech model. OpenAI Realtime: a phone line's 8 kHz goes
// as G.711 μ-law, which the model takes as it is (no resampling either way); any other rate as PCM16
// at the 24 kHz the model's PCM requires, resampled once each way. Gemini Live: PCM16 at 16 kHz in and
// 24 kHz out, whatever the line, each resampled once.
import { muLawDecode, muLawEncode } from '../../audio/g711.ts';
import { Resampler } from '../../audio/resampler.ts';
import type { RealtimeAudioFormat } from '../../llm/realtime/openai-realtime.ts';

const OPENAI_PCM_RATE = 24_000;

/** What the model takes and gives: μ-law at 8 kHz both ways, or PCM16 at its own rates. */
type ModelRates = { kind: 'pcmu' } | { kind: 'pcm'; input: number; output: number };

export class LineAudio {
  private readonly up: Resampler | null;
  private down: Resampler | null;

  private constructor(
    private readonly lineRate: number,
    private readonly rates: ModelRates,
  ) {
    this.up = rates.kind === 'pcmu' ? null : new Resampler(lineRate, rates.input);
    this.down = rates.kind === 'pcmu' ? null : new Resampler(rates.output, lineRate);
  }

  static forOpenAi(lineRate: number): LineAudio {
    return new LineAudio(
      lineRate,
      lineRate === 8000 ? { kind: 'pcmu' } : { kind: 'pcm', input: OPENAI_PCM_RATE, output: OPENAI_PCM_RATE },
    );
  }

  static forRates(lineRate: number, input: number, output: number): LineAudio {
    return new LineAudio(lineRate, { kind: 'pcm', input, output });
  }

  /** The session's format, as OpenAI Realtime names it. */
  get format(): RealtimeAudioFormat {
    return this.rates.kind === 'pcmu' ? { type: 'audio/pcmu' } : { type: 'audio/pcm', rate: OPENAI_PCM_RATE };
  }

  /** Bytes per millisecond of the caller's audio as the model takes it. */
  get inputBytesPerMs(): number {
    return this.rates.kind === 'pcmu' ? 8 : (this.rates.input * 2) / 1000;
  }

  /** Bytes per millisecond of the model's audio. */
  get outputBytesPerMs(): number {
    return this.rates.kind === 'pcmu' ? 8 : (this.rates.output * 2) / 1000;
  }

  /** One frame of the caller's, as the model takes it. */
  toModel(frame: Int16Array): Uint8Array {
    if (!this.up) return muLawEncode(frame);
    const pcm = this.up.push(frame);
    return new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  }

  /** A piece of the model's audio at the line's rate. */
  toLine(bytes: Uint8Array): Int16Array {
    if (!this.down) return muLawDecode(bytes);
    const aligned = new Int16Array(bytes.byteLength >> 1);
    new Uint8Array(aligned.buffer).set(bytes.subarray(0, aligned.byteLength));
    return this.down.push(aligned);
  }

  /** The end of one of the model's audio items: what the resampler still holds, and a fresh start for the next. */
  endOfItem(): Int16Array {
    if (!this.down || this.rates.kind === 'pcmu') return new Int16Array(0);
    const tail = this.down.flush();
    this.down = new Resampler(this.rates.output, this.lineRate);
    return tail;
  }
}
