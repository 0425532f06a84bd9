// A phrase said by one of flite's voices through its command line, for the benches that build their audio from flite
// phrases (bench/short-words.ts, bench/inner-pauses.ts).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeWav } from '../src/audio/wav.ts';

/** `text` in flite's `voice` at `rate`; `stretch` sets flite's duration_stretch (under 1 is quicker), else its own. */
export function fliteSaid(text: string, voice: string, rate: number, stretch?: number): Int16Array {
  const dir = mkdtempSync(join(tmpdir(), 'flite-said-'));
  try {
    const wav = join(dir, 'said.wav');
    const setf = stretch === undefined ? [] : ['--setf', `duration_stretch=${stretch}`];
    execFileSync('flite', ['-voice', voice, ...setf, '-t', text, '-o', wav]);
    return decodeWav(readFileSync(wav), rate).samples;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
