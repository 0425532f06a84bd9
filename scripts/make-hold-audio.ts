// Regenerates media/hold/hold-chime.8k.wav: what a caller hears while the agent brings a person in
// for a warm transfer — a soft four-note chime, then quiet, 6 s that loop. Made here (no third-party
// recording, so no licence to carry), deterministic. Run: node --import tsx scripts/make-hold-audio.ts
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeWav } from '../src/audio/wav.ts';

const RATE = 8000;
const NOTES = [523.25, 659.25, 783.99, 659.25]; // C5 E5 G5 E5
const NOTE_S = 0.6;
const LOOP_S = 6;
const samples = new Int16Array(RATE * LOOP_S);
for (const [n, hz] of NOTES.entries()) {
  const start = Math.round(n * NOTE_S * RATE);
  for (let i = 0; i < NOTE_S * 2 * RATE && start + i < samples.length; i++) {
    const t = i / RATE;
    // A bell-like note: quick rise, slow decay, a quiet octave above.
    const envelope = Math.min(1, t / 0.01) * Math.exp(-t * 3);
    const value = 0.18 * 32767 * envelope * (Math.sin(2 * Math.PI * hz * t) + 0.25 * Math.sin(4 * Math.PI * hz * t));
    samples[start + i] = Math.max(-32768, Math.min(32767, samples[start + i]! + Math.round(value)));
  }
}
const dir = join(import.meta.dirname, '..', 'media', 'hold');
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'hold-chime.8k.wav'), encodeWav({ samples, sampleRate: RATE }));
process.stdout.write(`media/hold/hold-chime.8k.wav (${LOOP_S} s)\n`);
