import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import wavefile from 'wavefile';
import { afterAll, describe, expect, it } from 'vitest';
import { muLawDecode, muLawEncode } from '../../src/audio/g711.ts';
import { decodeWav, encodeWav, readWavFile, writeWavFile } from '../../src/audio/wav.ts';
import { amplitudeAt, db, tone } from './signals.ts';

const dir = mkdtempSync(join(tmpdir(), 'wav-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('WAV files', () => {
  it('writes PCM16 and reads the same samples back', async () => {
    const samples = tone(440, 16000, 0.1);
    const path = join(dir, 'a.wav');
    await writeWavFile(path, { samples, sampleRate: 16000 });
    const back = await readWavFile(path);
    expect(back.sampleRate).toBe(16000);
    expect(Array.from(back.samples)).toEqual(Array.from(samples));
  });

  it('writes μ-law WAV with our codec and reads it back as the decoded samples', () => {
    const samples = tone(440, 8000, 0.1);
    const back = decodeWav(encodeWav({ samples, sampleRate: 8000 }, 'mulaw'));
    expect(Array.from(back.samples)).toEqual(Array.from(muLawDecode(muLawEncode(samples))));
  });

  it('reads stereo 24-bit 44.1 kHz as mono PCM16 at the asked rate', () => {
    const left = Array.from(tone(1000, 44100, 0.3), (s) => s * 256);
    const wav = new wavefile.WaveFile();
    wav.fromScratch(2, 44100, '24', [left, left]);
    const chunk = decodeWav(wav.toBuffer(), 16000);
    expect(chunk.sampleRate).toBe(16000);
    expect(chunk.samples.length).toBe(Math.ceil((left.length * 16000) / 44100));
    expect(Math.abs(db(amplitudeAt(chunk.samples.subarray(800, -800), 1000, 16000) / 10000))).toBeLessThan(1);
  });

  it('rejects bytes that are not a WAV file with AUDIO_BAD_WAV', () => {
    expect(() => decodeWav(new Uint8Array(64))).toThrow(expect.objectContaining({ code: 'AUDIO_BAD_WAV' }) as Error);
  });
});
