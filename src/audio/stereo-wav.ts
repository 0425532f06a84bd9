// The layout of a call recording's WAV: a 44-byte header, then two PCM16 channels interleaved.
import type { FileHandle } from 'node:fs/promises';
import { AudioError } from './errors.ts';

export const STEREO_WAV_HEADER_BYTES = 44;

/**
 * The rate and length of a two-channel PCM16 WAV as the recorder writes it. A file cut short
 * (the process died while writing it) is as long as what it holds.
 */
export async function readStereoWavLayout(
  file: FileHandle,
  path: string,
): Promise<{ rate: number; frames: number; bytes: number }> {
  const header = Buffer.alloc(STEREO_WAV_HEADER_BYTES);
  await file.read(header, 0, STEREO_WAV_HEADER_BYTES, 0);
  if (header.toString('ascii', 0, 4) !== 'RIFF' || header.readUInt16LE(22) !== 2 || header.readUInt16LE(34) !== 16) {
    throw new AudioError('AUDIO_BAD_WAV', `${path} is not a 2-channel PCM16 recording`);
  }
  const bytes = (await file.stat()).size;
  const frames = Math.max(0, Math.min(header.readUInt32LE(40), bytes - STEREO_WAV_HEADER_BYTES)) >> 2;
  return { rate: header.readUInt32LE(24), frames, bytes };
}
