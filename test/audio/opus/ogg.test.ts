// Ogg Opus pages and the Opus codec, checked against opus-tools (a reader and decoder we did not write).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createWriteStream } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AudioError } from '../../../src/audio/errors.ts';
import { OpusCodec, oggCrc, oggOpusRecording, opusPacketSamples } from '../../../src/audio/opus/index.ts';
import { decodeWav } from '../../../src/audio/wav.ts';
import { wavHeader } from '../../../src/call/recorder.ts';
import { decodeOggOpus, envelopeCorrelation } from '../../helpers/ogg-opus.ts';

const fixtures = join(import.meta.dirname, '..', '..', '..', 'media', 'fixtures');
const phrase = (name: string, rate: number) => decodeWav(readFileSync(join(fixtures, name)), rate).samples;
const dir = mkdtempSync(join(tmpdir(), 'ogg-opus-'));

/** A recording as the recorder writes it: caller left, agent right, at `rate`. */
function recording(rate: number, left: Int16Array, right: Int16Array): string {
  const frames = Math.max(left.length, right.length);
  const pcm = Buffer.alloc(frames * 4);
  for (let i = 0; i < frames; i++) {
    pcm.writeInt16LE(left[i] ?? 0, i * 4);
    pcm.writeInt16LE(right[i] ?? 0, i * 4 + 2);
  }
  const path = join(dir, `rec-${rate}-${frames}.wav`);
  writeFileSync(path, Buffer.concat([wavHeader(frames, 2, rate), pcm]));
  return path;
}

async function toOgg(wav: string): Promise<string> {
  const out = wav.replace(/\.wav$/, '.ogg');
  await pipeline(await oggOpusRecording(wav), createWriteStream(out));
  return out;
}

function decodedFrames48k(ogg: string): number {
  const out = ogg.replace(/\.ogg$/, '.dec.wav');
  execFileSync('opusdec', ['--quiet', '--rate', '48000', ogg, out]);
  return (readFileSync(out).length - 44) / 2 / 2;
}

describe('Ogg pages', () => {
  it('checksums pages with Ogg’s CRC-32 (polynomial 0x04C11DB7, not reflected, no initial or final xor)', () => {
    expect(oggCrc(Buffer.from('123456789'))).toBe(0x89a1897f);
    expect(oggCrc(new Uint8Array(0))).toBe(0);
  });

  it.each([
    ['CELT 20 ms, one frame', [31 << 3], 960],
    ['CELT 2.5 ms, one frame', [16 << 3], 120],
    ['SILK 60 ms, one frame', [3 << 3], 2880],
    ['hybrid 10 ms, two equal frames', [(12 << 3) | 1], 960],
    ['SILK 20 ms, two frames of different sizes', [(1 << 3) | 2], 1920],
    ['CELT 20 ms, code 3 with three frames', [(31 << 3) | 3, 3], 2880],
  ])('reads a packet’s length in 48 kHz samples from its TOC: %s', (_name, bytes, samples) => {
    expect(opusPacketSamples(Uint8Array.from(bytes))).toBe(samples);
  });

  it('refuses an empty packet and a code-3 packet without its frame count', () => {
    expect(() => opusPacketSamples(new Uint8Array(0))).toThrow(AudioError);
    expect(() => opusPacketSamples(Uint8Array.from([(31 << 3) | 3]))).toThrow(/frame count/);
  });
});

describe('Opus codec', () => {
  it('round-trips 20 ms frames of speech at 16 kHz: same length, the same loudness envelope', () => {
    const codec = new OpusCodec({ rate: 16000, channels: 1, bitrate: 24000, complexity: 5 });
    const speech = phrase('01-my-name-is-john-rms.16k.wav', 16000);
    const out: number[] = [];
    for (let i = 0; i + 320 <= speech.length; i += 320)
      out.push(...codec.decode(codec.encode(speech.slice(i, i + 320))));
    expect(out.length).toBe(Math.floor(speech.length / 320) * 320);
    // libopus's 6.5 ms delay at 16 kHz: compare the decoded audio shifted back by it.
    expect(envelopeCorrelation(speech, Int16Array.from(out).subarray(104))).toBeGreaterThan(0.95);
  });

  it('takes only whole 20 ms frames, Opus rates, and packets libopus can read', () => {
    const codec = new OpusCodec({ rate: 8000, channels: 1, bitrate: 16000, complexity: 5 });
    expect(() => codec.encode(new Int16Array(100))).toThrow(expect.objectContaining({ code: 'AUDIO_BAD_FRAME_SIZE' }));
    expect(() => new OpusCodec({ rate: 44100, channels: 1, bitrate: 16000, complexity: 5 })).toThrow(
      expect.objectContaining({ code: 'AUDIO_UNSUPPORTED_RATE' }),
    );
    expect(() => codec.decode(Buffer.alloc(0))).toThrow(expect.objectContaining({ code: 'AUDIO_BAD_OPUS_PACKET' }));
  });
});

describe('recordings as Ogg Opus', () => {
  it.each([8000, 16000])(
    'writes a %i Hz recording that opus-tools reads without a complaint, exactly as long as the WAV, each channel in its place',
    async (rate) => {
      const left = phrase('01-my-name-is-john-rms.16k.wav', rate);
      const right = phrase('02-i-would-like-to-slt.16k.wav', rate);
      // A length that is no whole number of frames: the last frame is padded, and the end trimmed back.
      const wav = recording(rate, left, right.subarray(0, right.length - 37));
      const ogg = await toOgg(wav);
      const frames = Math.max(left.length, right.length - 37);
      const info = execFileSync('opusinfo', [ogg], { encoding: 'utf8' });
      expect(info).toMatch(/Channels: 2/);
      expect(info).toMatch(new RegExp(`Original sample rate: ${rate} Hz`));
      expect(info).not.toMatch(/WARNING|corrupt|hole/i);
      expect(decodedFrames48k(ogg)).toBe(Math.round((frames * 48000) / rate));
      const decoded = await decodeOggOpus(readFileSync(ogg), rate);
      expect(decoded.left.length).toBe(frames);
      expect(envelopeCorrelation(left, decoded.left)).toBeGreaterThan(0.9);
      expect(envelopeCorrelation(right, decoded.right)).toBeGreaterThan(0.9);
      // Crossed, the channels do not match: caller and agent are not mixed or swapped.
      expect(envelopeCorrelation(left, decoded.right)).toBeLessThan(0.5);
    },
  );

  it('writes an empty recording as a valid empty stream', async () => {
    const ogg = await toOgg(recording(16000, new Int16Array(0), new Int16Array(0)));
    expect(execFileSync('opusinfo', [ogg], { encoding: 'utf8' })).toMatch(/Channels: 2/);
    expect((await decodeOggOpus(readFileSync(ogg))).left.length).toBe(0);
  });

  it('fails before any byte for a missing file (ENOENT) and for a file that is not a recording', async () => {
    await expect(oggOpusRecording(join(dir, 'nothing.wav'))).rejects.toMatchObject({ code: 'ENOENT' });
    const notOurs = join(dir, 'mono.wav');
    writeFileSync(notOurs, Buffer.concat([wavHeader(10, 1, 16000), Buffer.alloc(20)]));
    await expect(oggOpusRecording(notOurs)).rejects.toMatchObject({ code: 'AUDIO_BAD_WAV' });
  });
});
