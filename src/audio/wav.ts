// WAV files only (fixtures, recordings, test sets): never on the per-frame path. Reads any WAV
// wavefile understands (PCM 8–32 bit, float, μ-law, A-law, IMA ADPCM; any channel count) to
// PCM16 mono at the rate asked for.
import { readFile, writeFile } from 'node:fs/promises';
import wavefile from 'wavefile';
import { z } from 'zod';
import { AudioError } from './errors.ts';
import { muLawEncode } from './g711.ts';
import { resample } from './resampler.ts';
import type { PcmChunk } from './pcm.ts';

const FmtSchema = z.object({
  numChannels: z.int().min(1),
  sampleRate: z.int().min(1),
});

function toInt16(samples: unknown): Int16Array {
  if (samples instanceof Int16Array) return samples;
  if (ArrayBuffer.isView(samples) && !(samples instanceof DataView))
    return Int16Array.from(samples as unknown as ArrayLike<number>);
  throw new AudioError('AUDIO_BAD_WAV', 'WAV samples are not a numeric array');
}

/**
 * Decode WAV bytes to PCM16 mono; resampled to `sampleRate` when given, else at the file's rate.
 * Channels are mixed, unless `channel` picks one (0 is the left: a call recording's caller).
 */
export function decodeWav(bytes: Uint8Array, sampleRate?: number, channel?: number): PcmChunk {
  const wav = new wavefile.WaveFile();
  try {
    wav.fromBuffer(bytes);
    if (wav.bitDepth === '8m') wav.fromMuLaw('16');
    else if (wav.bitDepth === '8a') wav.fromALaw('16');
    else if (wav.bitDepth === '4') wav.fromIMAADPCM('16');
    else if (wav.bitDepth !== '16') wav.toBitDepth('16');
  } catch (error) {
    throw new AudioError('AUDIO_BAD_WAV', `cannot decode WAV: ${(error as Error).message}`, { cause: error });
  }
  const fmt = FmtSchema.safeParse(wav.fmt);
  if (!fmt.success) throw new AudioError('AUDIO_BAD_WAV', 'WAV fmt chunk has no channel count or sample rate');
  const { numChannels, sampleRate: fileRate } = fmt.data;
  const raw: unknown = wav.getSamples(false, Int16Array);
  let mono: Int16Array;
  if (numChannels === 1) {
    mono = toInt16(raw);
  } else {
    if (!Array.isArray(raw) || raw.length !== numChannels)
      throw new AudioError('AUDIO_BAD_WAV', 'WAV channels do not match the fmt chunk');
    const channels = raw.map(toInt16);
    if (channel !== undefined && channels[channel] === undefined)
      throw new AudioError('AUDIO_BAD_WAV', `WAV has ${numChannels} channels, no channel ${channel}`);
    const length = channels[0]?.length ?? 0;
    if (channel !== undefined) mono = channels[channel]!;
    else {
      mono = new Int16Array(length);
      for (let i = 0; i < length; i++) {
        let sum = 0;
        for (const samples of channels) sum += samples[i] ?? 0;
        mono[i] = Math.round(sum / numChannels);
      }
    }
  }
  const rate = sampleRate ?? fileRate;
  return { samples: rate === fileRate ? mono : resample(mono, fileRate, rate), sampleRate: rate };
}

export async function readWavFile(path: string, sampleRate?: number, channel?: number): Promise<PcmChunk> {
  return decodeWav(await readFile(path), sampleRate, channel);
}

export type WavEncoding = 'pcm16' | 'mulaw';

/** Encode PCM16 mono as a WAV file: linear PCM16, or G.711 μ-law (format 7) through our own codec. */
export function encodeWav(chunk: PcmChunk, encoding: WavEncoding = 'pcm16'): Uint8Array {
  const wav = new wavefile.WaveFile();
  if (encoding === 'mulaw') {
    wav.fromScratch(1, chunk.sampleRate, '8m', muLawEncode(chunk.samples));
  } else {
    wav.fromScratch(1, chunk.sampleRate, '16', chunk.samples);
  }
  return wav.toBuffer();
}

export async function writeWavFile(path: string, chunk: PcmChunk, encoding: WavEncoding = 'pcm16'): Promise<void> {
  await writeFile(path, encodeWav(chunk, encoding));
}
