// Test audio for the STT tests: the project's fixture phrases (media/fixtures), and for tests
// that need particular sentences, the same kind of audio voiced with the flite CLI into a temp folder.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { muLawDecode, muLawEncode } from '../../../src/audio/g711.ts';
import { resample } from '../../../src/audio/resampler.ts';
import { decodeWav, readWavFile } from '../../../src/audio/wav.ts';
import { fixtures } from '../../support/test-sets.ts';

export interface Clip {
  text: string;
  /** Who speaks: clips of one voice form one call. */
  voice?: string;
  samples: Int16Array;
  sampleRate: number;
}

export const PHRASES = [
  'I would like to book a table for two tomorrow evening',
  'can you tell me my account balance please',
  'I need to change my delivery address',
  'please transfer me to a human agent',
  'I want to cancel my subscription',
  'the package arrived damaged yesterday',
  'what time do you open on saturday',
  'my order number is four five six seven',
  'yes that sounds good to me',
  'could you repeat that more slowly',
  'I am calling about my last invoice',
  'can I pay with a credit card',
  'I lost my password and cannot log in',
  'how much does the premium plan cost',
  'please send me an email confirmation',
  'is there a store near the airport',
];

const cacheDir = join(tmpdir(), 'stt-test-clips');

/** The phrase voiced by flite at 16 kHz. */
export function voice(text: string, voiceName: 'slt' | 'rms' | 'awb' | 'kal' = 'slt'): Clip {
  mkdirSync(cacheDir, { recursive: true });
  const file = join(cacheDir, `${voiceName}-${text.replace(/[^a-z0-9]+/gi, '_')}.wav`);
  if (!existsSync(file)) execFileSync('flite', ['-voice', voiceName, '-t', text, '-o', file]);
  const chunk = decodeWav(readFileSync(file));
  return { text, samples: chunk.samples, sampleRate: chunk.sampleRate };
}

/** The clip as a carrier delivers it: 8 kHz μ-law, decoded back to PCM at 8 kHz. */
export function telephone(clip: Clip): Clip {
  const narrow = resample(clip.samples, clip.sampleRate, 8000);
  return { text: clip.text, samples: muLawDecode(muLawEncode(narrow)), sampleRate: 8000 };
}

/** 20 ms frames, as transports push them. */
export function* frames(samples: Int16Array, sampleRate: number): Generator<Int16Array> {
  const n = sampleRate / 50;
  for (let i = 0; i < samples.length; i += n) yield samples.subarray(i, i + n);
}

/** The fixture phrases (media/fixtures) of one encoding, decoded to PCM at their own rate. */
export async function fixtureClips(encoding: 'pcm16' | 'mulaw'): Promise<Clip[]> {
  return Promise.all(
    fixtures()
      .filter((f) => f.encoding === encoding)
      .map(async (f) => ({ text: f.text, voice: f.voice, ...(await readWavFile(f.path)) })),
  );
}
