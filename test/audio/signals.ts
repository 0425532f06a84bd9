// Test signals and a single-bin DFT (Goertzel-style) level meter for resampler quality checks.
export function tone(frequency: number, sampleRate: number, seconds: number, amplitude = 10000): Int16Array {
  const n = Math.round(sampleRate * seconds);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(amplitude * Math.sin((2 * Math.PI * frequency * i) / sampleRate));
  return out;
}

/** Amplitude of the component at `frequency` (Hann-windowed correlation over the whole block). */
export function amplitudeAt(samples: Int16Array, frequency: number, sampleRate: number): number {
  let re = 0;
  let im = 0;
  let windowSum = 0;
  const n = samples.length;
  for (let i = 0; i < n; i++) {
    const w = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (n - 1));
    const phase = (2 * Math.PI * frequency * i) / sampleRate;
    re += samples[i]! * w * Math.cos(phase);
    im += samples[i]! * w * Math.sin(phase);
    windowSum += w;
  }
  return (2 * Math.hypot(re, im)) / windowSum;
}

export function db(ratio: number): number {
  return 20 * Math.log10(ratio);
}

/** Drop the first and last `seconds` to skip filter start-up. */
export function trim(samples: Int16Array, sampleRate: number, seconds = 0.05): Int16Array {
  const k = Math.round(sampleRate * seconds);
  return samples.subarray(k, samples.length - k);
}

/** RMS of the whole block in sample units. */
export function rmsOf(samples: Int16Array): number {
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i]! * samples[i]!;
  return Math.sqrt(sum / Math.max(1, samples.length));
}
