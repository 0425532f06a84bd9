// Opus (RFC 6716) through libopus: @discordjs/opus is a native addon compiled at install from
// the libopus source it bundles (.npmrc build-from-source: its prebuilt download is never tried).
// Loaded on first use, so a machine where it did not build still runs PCM calls.
import { createRequire } from 'node:module';
import { AudioError } from '../errors.ts';

type OpusAddon = typeof import('@discordjs/opus');
type NativeOpus = InstanceType<OpusAddon['OpusEncoder']>;

/** The packet length of every Opus frame we make: 20 ms, the browser's and most VoIP's default. */
export const OPUS_FRAME_MS = 20;
/** Rates libopus encodes and decodes at directly; Ogg Opus counts time at 48 kHz whatever the rate. */
export const OPUS_RATES = [8000, 12000, 16000, 24000, 48000] as const;

// libopus encoder controls (opus_defines.h).
const OPUS_SET_COMPLEXITY = 4010;
const OPUS_SET_SIGNAL = 4024;
const OPUS_SIGNAL_VOICE = 3001;

let addon: OpusAddon | null | undefined;
let loadError = '';

function loadAddon(): OpusAddon | null {
  if (addon !== undefined) return addon;
  try {
    addon = createRequire(import.meta.url)('@discordjs/opus') as OpusAddon;
  } catch (error) {
    addon = null;
    loadError = (error as Error).message.split('\n')[0] ?? '';
  }
  return addon;
}

/** Whether Opus can be used in this process (the addon built and loads). */
export function opusAvailable(): boolean {
  return loadAddon() !== null;
}

export interface OpusCodecOptions {
  rate: number;
  channels: 1 | 2;
  /** Bits per second of the encoded stream (libopus accepts 500–512,000). */
  bitrate: number;
  /** 0–10: libopus's search effort; 10 is its default and costs ~2.5× what 5 does here. */
  complexity: number;
}

/**
 * One stream's Opus encoder and decoder (each made by libopus on first use), 20 ms frames of
 * interleaved PCM16. Voice-tuned: the encoder is told its signal is speech.
 */
export class OpusCodec {
  readonly frameSamples: number;
  private readonly native: NativeOpus;
  private readonly frameBytes: number;

  constructor(readonly options: OpusCodecOptions) {
    const opus = loadAddon();
    if (!opus)
      throw new AudioError('AUDIO_OPUS_UNAVAILABLE', `the Opus addon (@discordjs/opus) did not load: ${loadError}`);
    if (!(OPUS_RATES as readonly number[]).includes(options.rate))
      throw new AudioError('AUDIO_UNSUPPORTED_RATE', `Opus runs at ${OPUS_RATES.join(', ')} Hz, not ${options.rate}`);
    this.native = new opus.OpusEncoder(options.rate, options.channels);
    this.native.setBitrate(options.bitrate);
    this.native.applyEncoderCTL(OPUS_SET_COMPLEXITY, options.complexity);
    this.native.applyEncoderCTL(OPUS_SET_SIGNAL, OPUS_SIGNAL_VOICE);
    this.frameSamples = (options.rate * OPUS_FRAME_MS) / 1000;
    this.frameBytes = this.frameSamples * options.channels * 2;
  }

  /**
   * One 20 ms frame (interleaved when stereo) → one packet. Any other length is refused: libopus takes only whole
   * frames.
   */
  encode(frame: Int16Array): Buffer {
    if (frame.byteLength !== this.frameBytes)
      throw new AudioError(
        'AUDIO_BAD_FRAME_SIZE',
        `Opus frames are ${this.frameBytes} bytes (${OPUS_FRAME_MS} ms), not ${frame.byteLength}`,
      );
    return this.native.encode(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength));
  }

  /** One packet (any Opus frame length up to 120 ms) → its PCM16 samples, interleaved when stereo. */
  decode(packet: Buffer): Int16Array {
    if (packet.length === 0) throw new AudioError('AUDIO_BAD_OPUS_PACKET', 'an empty Opus packet');
    let pcm: Buffer;
    try {
      pcm = this.native.decode(packet);
    } catch (error) {
      throw new AudioError(
        'AUDIO_BAD_OPUS_PACKET',
        `libopus could not decode a ${packet.length}-byte packet: ${(error as Error).message}`,
        { cause: error },
      );
    }
    // Copy: the addon's buffer may not sit at an even offset, which Int16Array needs.
    const samples = new Int16Array(pcm.length / 2);
    Buffer.from(samples.buffer).set(pcm);
    return samples;
  }
}
