// The carrier edge in one place: G.711 at 8 kHz (Twilio sends μ-law, 160-byte 20 ms frames) to
// and from PCM16 20 ms frames at an internal rate (16 kHz unless told; 8 kHz skips resampling).
// Decode → resample → frame on the way in; resample → frame → encode on the way out. Filter
// state is carried across calls.
import { Framer } from './framer.ts';
import { aLawDecode, aLawEncode, muLawDecode, muLawEncode } from './g711.ts';
import { FRAME_MS, INTERNAL_SAMPLE_RATE, samplesPerFrame } from './pcm.ts';
import { Resampler } from './resampler.ts';

export type G711Encoding = 'mulaw' | 'alaw';

export interface CarrierAudioOptions {
  encoding?: G711Encoding;
  /** Carrier sample rate (G.711 telephony is 8000). */
  carrierRate?: number;
  /** Internal sample rate (16000 in this runtime). */
  internalRate?: number;
}

/** Decoded audio is handed out in views of blocks this long (1 s at 8 kHz). */
const BLOCK_SAMPLES = 8000;

/** Carrier G.711 bytes in → internal PCM16 20 ms frames out. */
export class CarrierAudioIn {
  private readonly decode: (bytes: Uint8Array, out: Int16Array) => Int16Array;
  /**
   * Decoded samples go into views of one block: a typed array with a buffer of its own per 20 ms
   * frame costs more here (~1.4 µs) than decoding it. Frames out may thus share an ArrayBuffer.
   */
  private block = new Int16Array(0);
  private blockUsed = 0;
  private readonly resampler: Resampler;
  private readonly framer: Framer;

  constructor(options: CarrierAudioOptions = {}) {
    const encoding = options.encoding ?? 'mulaw';
    this.decode = encoding === 'alaw' ? (b, out) => aLawDecode(b, out) : (b, out) => muLawDecode(b, out);
    const internalRate = options.internalRate ?? INTERNAL_SAMPLE_RATE;
    this.resampler = new Resampler(options.carrierRate ?? 8000, internalRate);
    this.framer = new Framer(samplesPerFrame(internalRate, FRAME_MS));
  }

  /** A media payload (any length) in; the whole internal frames it completes out. */
  push(payload: Uint8Array): Int16Array[] {
    const pcm = this.resampler.push(this.decode(payload, this.take(payload.length)));
    // A carrier frame at the internal rate is already a whole frame: hand over the decoded
    // samples themselves (nobody else holds them) instead of copying them through the framer.
    if (pcm.length === this.framer.frameSamples && this.framer.buffered === 0) return [pcm];
    return this.framer.push(pcm);
  }

  private take(samples: number): Int16Array {
    if (this.blockUsed + samples > this.block.length) {
      this.block = new Int16Array(Math.max(samples, BLOCK_SAMPLES));
      this.blockUsed = 0;
    }
    const view = new Int16Array(this.block.buffer, this.blockUsed * 2, samples);
    this.blockUsed += samples;
    return view;
  }

  /** End of stream: remaining audio, the last frame padded with silence. */
  flush(): Int16Array[] {
    const frames = this.framer.push(this.resampler.flush());
    const last = this.framer.flush();
    if (last) frames.push(last);
    return frames;
  }
}

/** Internal PCM16 in → carrier G.711 20 ms frames (160 bytes at 8 kHz) out. */
export class CarrierAudioOut {
  private readonly encode: (pcm: Int16Array) => Uint8Array;
  private readonly resampler: Resampler;
  private readonly framer: Framer;

  constructor(options: CarrierAudioOptions = {}) {
    const encoding = options.encoding ?? 'mulaw';
    this.encode = encoding === 'alaw' ? (p) => aLawEncode(p) : (p) => muLawEncode(p);
    const carrierRate = options.carrierRate ?? 8000;
    this.resampler = new Resampler(options.internalRate ?? INTERNAL_SAMPLE_RATE, carrierRate);
    this.framer = new Framer(samplesPerFrame(carrierRate, FRAME_MS));
  }

  push(samples: Int16Array): Uint8Array[] {
    return this.framer.push(this.resampler.push(samples)).map(this.encode);
  }

  flush(): Uint8Array[] {
    const frames = this.framer.push(this.resampler.flush());
    const last = this.framer.flush();
    if (last) frames.push(last);
    return frames.map(this.encode);
  }
}
