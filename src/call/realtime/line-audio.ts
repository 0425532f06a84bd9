// The line's audio in and out of a speech-to-speech model: a phone line's 8 kHz goes as G.711 μ-law,
// which the model takes as it is (no resampling either way); any other rate as PCM16 at the 24 kHz the
// model's PCM requires, resampled once each way.
import { muLawDecode, muLawEncode } from '../../audio/g711.ts';
import { Resampler } from '../../audio/resampler.ts';
import type { RealtimeAudioFormat } from '../../llm/realtime/openai-realtime.ts';

const MODEL_PCM_RATE = 24_000;

export class LineAudio {
  readonly format: RealtimeAudioFormat;
  private readonly up: Resampler | null;
  private down: Resampler | null;

  constructor(private readonly lineRate: number) {
    const pcmu = lineRate === 8000;
    this.format = pcmu ? { type: 'audio/pcmu' } : { type: 'audio/pcm', rate: MODEL_PCM_RATE };
    this.up = pcmu ? null : new Resampler(lineRate, MODEL_PCM_RATE);
    this.down = pcmu ? null : new Resampler(MODEL_PCM_RATE, lineRate);
  }

  /** Bytes per millisecond of the model's audio. */
  get bytesPerMs(): number {
    return this.up ? (MODEL_PCM_RATE * 2) / 1000 : 8;
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
    if (!this.down) return new Int16Array(0);
    const tail = this.down.flush();
    this.down = new Resampler(MODEL_PCM_RATE, this.lineRate);
    return tail;
  }
}
