// PCM16 helpers. The runtime's one internal format is PCM16 mono, 16 kHz, 20 ms frames;
// these helpers work at any rate so the edges (8 kHz carriers, 24/48 kHz engines) can use them.
import { AudioError } from './errors.ts';

export const INTERNAL_SAMPLE_RATE = 16000;
export const FRAME_MS = 20;
/** Rates a call's frames may have: a phone line's 8 kHz, or the internal 16 kHz. */
export type MediaRate = 8000 | 16000;

/** One block of PCM16 mono samples. */
export interface PcmChunk {
  samples: Int16Array;
  sampleRate: number;
}
/**
 * Rates met at the edges (carriers, engines), each tested through the resampler; it accepts other integer rates too.
 */
export const SUPPORTED_SAMPLE_RATES = [8000, 16000, 22050, 24000, 44100, 48000] as const;
export type SupportedSampleRate = (typeof SUPPORTED_SAMPLE_RATES)[number];
/** dBFS reported for digital silence instead of -Infinity, so values stay JSON-safe. */
export const DBFS_FLOOR = -100;

export function isSupportedSampleRate(rate: number): rate is SupportedSampleRate {
  return (SUPPORTED_SAMPLE_RATES as readonly number[]).includes(rate);
}

/** Samples in one frame of `ms` milliseconds (20 ms at 16 kHz = 320). */
export function samplesPerFrame(sampleRate: number, ms: number = FRAME_MS): number {
  const n = (sampleRate * ms) / 1000;
  if (!Number.isInteger(n) || n <= 0) {
    throw new AudioError('AUDIO_BAD_FRAME_SIZE', `${ms} ms at ${sampleRate} Hz is not a whole number of samples`);
  }
  return n;
}

const littleEndianHost = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Little-endian bytes → Int16Array. Shares memory with `bytes` when it is aligned on a
 * little-endian host (no copy); copies otherwise. An odd trailing byte is ignored.
 */
export function bytesToInt16(bytes: Uint8Array): Int16Array {
  const count = bytes.byteLength >> 1;
  if (littleEndianHost && bytes.byteOffset % 2 === 0) {
    return new Int16Array(bytes.buffer, bytes.byteOffset, count);
  }
  const out = new Int16Array(count);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < count; i++) out[i] = view.getInt16(i * 2, true);
  return out;
}

/** Int16Array → little-endian Buffer; a view without copy on little-endian hosts. */
export function int16ToBuffer(samples: Int16Array): Buffer {
  if (littleEndianHost) return Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  const out = Buffer.allocUnsafe(samples.length * 2);
  for (let i = 0; i < samples.length; i++) out.writeInt16LE(samples[i]!, i * 2);
  return out;
}

/** Root mean square in sample units (0..32768). */
export function rms(samples: Int16Array): number {
  if (samples.length === 0) return 0;
  let sum = 0;
  for (let i = 0; i < samples.length; i++) {
    const s = samples[i]!;
    sum += s * s;
  }
  return Math.sqrt(sum / samples.length);
}

/** RMS level relative to full scale (a full-scale square wave is 0 dBFS); DBFS_FLOOR for silence. */
export function dbfs(samples: Int16Array): number {
  const level = rms(samples);
  if (level === 0) return DBFS_FLOOR;
  return Math.max(DBFS_FLOOR, 20 * Math.log10(level / 32768));
}

function clamp16(value: number): number {
  return value > 32767 ? 32767 : value < -32768 ? -32768 : Math.round(value);
}

/** Mix `source` into `target` in place with saturation (no wrap-around on overflow). */
export function mixInto(target: Int16Array, source: Int16Array, gain = 1): Int16Array {
  const n = Math.min(target.length, source.length);
  for (let i = 0; i < n; i++) target[i] = clamp16(target[i]! + source[i]! * gain);
  return target;
}

/** Mix two signals into a new array as long as the longer one, with saturation. */
export function mix(a: Int16Array, b: Int16Array, gainA = 1, gainB = 1): Int16Array {
  const out = new Int16Array(Math.max(a.length, b.length));
  for (let i = 0; i < out.length; i++) out[i] = clamp16((a[i] ?? 0) * gainA + (b[i] ?? 0) * gainB);
  return out;
}

/** Scale in place with saturation. */
export function applyGain(samples: Int16Array, gain: number): Int16Array {
  for (let i = 0; i < samples.length; i++) samples[i] = clamp16(samples[i]! * gain);
  return samples;
}

/** Digital silence of the given duration. */
export function silence(durationMs: number, sampleRate: number): Int16Array {
  return new Int16Array(Math.round((durationMs * sampleRate) / 1000));
}

/** Concatenate blocks into one array. */
export function concatPcm(blocks: readonly Int16Array[]): Int16Array {
  let total = 0;
  for (const block of blocks) total += block.length;
  const out = new Int16Array(total);
  let offset = 0;
  for (const block of blocks) {
    out.set(block, offset);
    offset += block.length;
  }
  return out;
}

/** Float samples in [-1, 1] → PCM16, with saturation. */
export function floatToInt16(samples: ArrayLike<number>, out: Int16Array = new Int16Array(samples.length)): Int16Array {
  for (let i = 0; i < samples.length; i++) out[i] = clamp16(samples[i]! * 32768);
  return out;
}

/** PCM16 → float samples in [-1, 1). */
export function int16ToFloat(samples: Int16Array, out: Float32Array = new Float32Array(samples.length)): Float32Array {
  for (let i = 0; i < samples.length; i++) out[i] = samples[i]! / 32768;
  return out;
}
