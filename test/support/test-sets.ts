// Locates audio test sets that Debian packages install (see scripts/setup.d/20-speech-audio.mjs):
// - asterisk-core-sounds-en-wav: 8 kHz human telephone prompts (Allison Smith), transcripts in
//   asterisk-core-sounds-en's core-sounds-en.txt. A TEST SET ONLY: never use these recordings
//   or transcripts to build grammars, dictionaries, models or adaptation data.
// - asterisk-moh-opsound-wav: music on hold, for VAD false-positive tests.
// - media/fixtures/: our own flite phrases (scripts/make-fixtures.ts).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { z } from 'zod';

function packageFiles(pkg: string): string[] {
  try {
    return execFileSync('dpkg', ['-L', pkg], { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .split('\n')
      .filter(Boolean);
  } catch {
    return [];
  }
}

export interface TelephonePrompt {
  /** Sound id as Asterisk names it, e.g. "agent-pass" or "digits/1". */
  id: string;
  file: string;
  text: string;
}

/** Folder of the English prompts (/usr/share/asterisk/sounds/en on Debian), or null when not installed. */
export function asteriskSoundsDir(): string | null {
  const wav = packageFiles('asterisk-core-sounds-en-wav').find((f) => f.endsWith('/agent-pass.wav'));
  const candidates = ['/usr/share/asterisk/sounds/en', ...(wav ? [wav.slice(0, -'/agent-pass.wav'.length)] : [])];
  return candidates.find((dir) => existsSync(join(dir, 'agent-pass.wav'))) ?? null;
}

/**
 * The human telephone prompts that have a WAV file and a spoken transcript (entries in
 * [brackets] or (parentheses), e.g. tones and silence, are left out). Empty when the packages
 * are not installed.
 */
export function asteriskPrompts(): TelephonePrompt[] {
  const dir = asteriskSoundsDir();
  const list = packageFiles('asterisk-core-sounds-en').find((f) => /core-sounds-en\.txt(\.gz)?$/.test(f));
  if (!dir || !list || !existsSync(list)) return [];
  const raw = readFileSync(list);
  const text = (list.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8');
  const prompts: TelephonePrompt[] = [];
  for (const line of text.split('\n')) {
    const match = /^([\w/-]+):\s*(.+?)\s*$/.exec(line);
    if (!match || line.startsWith(';')) continue;
    const [, id, spoken] = match;
    if (!id || !spoken || spoken.startsWith('[') || spoken.startsWith('(')) continue;
    const file = join(dir, `${id}.wav`);
    if (existsSync(file)) prompts.push({ id, file, text: spoken });
  }
  return prompts;
}

/** The recorded silences (silence/1 … silence/10) of the prompt set: near-silent line noise. */
export function asteriskSilenceFiles(): string[] {
  const dir = asteriskSoundsDir();
  if (!dir) return [];
  return Array.from({ length: 10 }, (_, i) => join(dir, 'silence', `${i + 1}.wav`)).filter((f) => existsSync(f));
}

/** Music-on-hold WAV files (8 kHz mono), for VAD false-positive tests. */
export function musicOnHoldFiles(): string[] {
  return packageFiles('asterisk-moh-opsound-wav').filter((f) => f.endsWith('.wav') && existsSync(f));
}

const FixtureSchema = z.object({
  file: z.string(),
  voice: z.string(),
  text: z.string(),
  sampleRate: z.int(),
  encoding: z.enum(['pcm16', 'mulaw']),
});
export type Fixture = z.infer<typeof FixtureSchema> & { path: string };

export const FIXTURES_DIR = join(import.meta.dirname, '..', '..', 'media', 'fixtures');

/** Our flite caller phrases from media/fixtures/transcripts.json. */
export function fixtures(): Fixture[] {
  const list = z.array(FixtureSchema).parse(JSON.parse(readFileSync(join(FIXTURES_DIR, 'transcripts.json'), 'utf8')));
  return list.map((entry) => ({ ...entry, path: join(FIXTURES_DIR, entry.file) }));
}
