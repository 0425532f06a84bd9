// The noises the phone-path benches mix in or play alone, at 8 kHz: music on hold (asterisk-moh-opsound), office babble
// (six of our flite fixture phrases in four voices, overlapping) and a fan (stationary pink noise from a fixed seed).
import { concatPcm, rms } from '../src/audio/pcm.ts';
import { resample } from '../src/audio/resampler.ts';
import { readWavFile } from '../src/audio/wav.ts';
import { fixtures, musicOnHoldFiles } from '../test/support/test-sets.ts';

const RATE = 8000;
const FRAME = RATE / 50;

export interface Noise {
  name: string;
  samples: Int16Array;
  /** Its active level (activeRms). */
  rms: number;
}

/** RMS over the frames within 30 dB of the loudest: the speech, not the pauses around it. */
export function activeRms(samples: Int16Array): number {
  const levels: number[] = [];
  for (let i = 0; i + FRAME <= samples.length; i += FRAME) levels.push(rms(samples.subarray(i, i + FRAME)));
  const loudest = Math.max(...levels);
  const active = levels.filter((l) => l > loudest / 31.6);
  return Math.sqrt(active.reduce((s, l) => s + l * l, 0) / Math.max(1, active.length));
}

export function scaled(samples: Int16Array, gain: number): Int16Array {
  return Int16Array.from(samples, (s) => Math.max(-32768, Math.min(32767, Math.round(s * gain))));
}

/** The three noises at 8 kHz: two minutes of music on hold, 30 s of babble, 30 s of fan. */
export async function phoneNoises(): Promise<Noise[]> {
  const moh = concatPcm(
    await Promise.all(
      musicOnHoldFiles()
        .slice(0, 2)
        .map(async (f) => (await readWavFile(f, RATE)).samples.subarray(0, 60 * RATE)),
    ),
  );
  // Babble: six phrases in four voices, each looped at its own offset and summed.
  const voices = fixtures()
    .filter((f) => f.sampleRate === 16000)
    .slice(0, 6);
  const phrases = await Promise.all(
    voices.map(async (f) => resample((await readWavFile(f.path)).samples, 16000, RATE)),
  );
  const babbleLength = 30 * RATE;
  const babble = new Int16Array(babbleLength);
  phrases.forEach((p, k) => {
    const shift = Math.round((k * p.length) / phrases.length);
    for (let i = 0; i < babbleLength; i++)
      babble[i] = Math.max(-32768, Math.min(32767, babble[i]! + p[(i + shift) % p.length]! * 0.6));
  });
  // A fan or a car: stationary pink noise (Paul Kellet's filter on white noise from a fixed seed).
  const fan = new Int16Array(30 * RATE);
  let seed = 12345;
  const white = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
  let b0 = 0;
  let b1 = 0;
  let b2 = 0;
  for (let i = 0; i < fan.length; i++) {
    const w = white();
    b0 = 0.99765 * b0 + w * 0.099046;
    b1 = 0.963 * b1 + w * 0.2965164;
    b2 = 0.57 * b2 + w * 1.0526913;
    fan[i] = Math.round((b0 + b1 + b2 + w * 0.1848) * 3000);
  }
  return [
    { name: 'music on hold', samples: moh, rms: activeRms(moh) },
    { name: 'office babble', samples: babble, rms: activeRms(babble) },
    { name: 'fan (pink noise)', samples: fan, rms: activeRms(fan) },
  ];
}
