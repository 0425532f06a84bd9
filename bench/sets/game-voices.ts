// The "game voices" human test set: lines acted by ten credited voice actors in Flight of the Amazon
// Queen (Debian package flight-of-the-amazon-queen, freeware; the package's copyright file allows
// redistribution). Fetched from Debian's archive with `apt-get download` (the package itself
// depends on ScummVM, which we do not need), unpacked with dpkg-deb, and written once under
// artifacts/sets/game-voices/ as 11,025 Hz WAV files and a manifest. A TEST SET ONLY, like the
// asterisk prompts: never used to build or tune models.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MPEGDecoder } from 'mpg123-decoder';
import { z } from 'zod';
import { floatToInt16 } from '../../src/audio/pcm.ts';
import { writeWavFile } from '../../src/audio/wav.ts';
import { normalizeWords } from '../../bench/wer.ts';
import { conversationParts, entryBytes, readQueenArchive, voiceCredits } from './queen-archive.ts';

const PACKAGE = 'flight-of-the-amazon-queen';
const INSTALLED_ARCHIVE = `/usr/share/scummvm/${PACKAGE}/queen.1c`;
const SET_DIR = join(import.meta.dirname, '..', '..', 'artifacts', 'sets', 'game-voices');
const MANIFEST = join(SET_DIR, 'manifest.json');
const NAMES_MANIFEST = join(SET_DIR, 'names.json');
// Lines reviewed by hand whose subtitle is not what the actor says (see game-voices-review.json).
const REVIEW_FILE = join(import.meta.dirname, 'game-voices-review.json');

/** Conversation file stem → the role's name as the game's credits spell it. Joe speaks in all. */
const CONVERSATION_ROLES: Record<string, string> = {
  AND: 'Anderson',
  BOB: 'Trader Bob',
  BUD: 'Bud',
  CHEF: 'Chef',
  CHIEF: 'Pygmy Chief',
  FAYE: 'Faye Russel',
  FRANK: 'Frank Ironstein',
  HENRY: 'Henry',
  IAN: 'Ian',
  JIM: 'Jimmy Cook',
  JOHN: 'John',
  KLUNK: 'Klunk',
  LOLA: 'Lola',
  LOU: 'Mary-Lou Cook',
  NAOMI: 'Naomi',
  PRIN: 'Princess Azura',
  SEC: 'Secretary',
  SHOWERAM: 'Showering Amazon',
  SPARKY: 'Sparky',
  WEDGE: 'Wedgewood',
  WITCH: 'Witch Doctor',
};
const HERO_ROLE = 'Joe King';

// What a clean test utterance looks like: whole words, a few of them, spoken at a human pace (a
// subtitle far from its sound's length is a sign the two differ).
const SELECTION = {
  perActor: 20,
  minWords: 3,
  maxWords: 20,
  minSeconds: 1,
  maxSeconds: 8,
  minSecondsPerWord: 0.18,
  maxSecondsPerWord: 0.75,
};

/**
 * The game's own names and terms: the phrase hints an agent for this world would carry. Lines that
 * hold one (outside the main set) make the "names" set, on which bench:speech measures phrase hints.
 */
export const GAME_TERMS = [
  'Almaxaquottl',
  'Anderson',
  'Azura',
  'Barret',
  'Bonzo',
  'Commander Rocket',
  'Crystal Skull',
  'Faye Russel',
  'Floda',
  'Gehrig',
  'Harbuckle',
  'Ironstein',
  'Joe King',
  'Karl',
  'Laris',
  'lederhosen',
  'Mary-Lou',
  'Mobobo',
  'Naomi',
  'Sloth Island',
  'Sparky',
  'Stacey',
  'Trader Bob',
  'Wedgewood',
];
const NAMES_SET_SIZE = 80;

/** Whether the line says one of the terms (as whole words). */
export function termsIn(text: string, terms: readonly string[] = GAME_TERMS): string[] {
  const words = ` ${normalizeWords(text).join(' ')} `;
  return terms.filter((t) => words.includes(` ${normalizeWords(t).join(' ')} `));
}

export const gameVoiceSchema = z.object({
  id: z.string(),
  actor: z.string(),
  role: z.string(),
  text: z.string(),
  seconds: z.number(),
  file: z.string(),
});
export type GameVoice = z.infer<typeof gameVoiceSchema>;

const reviewSchema = z.object({ method: z.string(), excluded: z.record(z.string(), z.string()) });

function say(message: string): void {
  process.stdout.write(`[game-voices] ${message}\n`);
}

/** queen.1c: the installed package's, or one unpacked from the .deb under artifacts/. */
function archivePath(): string {
  if (existsSync(INSTALLED_ARCHIVE)) return INSTALLED_ARCHIVE;
  const debDir = join(SET_DIR, 'deb');
  const unpacked = join(debDir, 'root', INSTALLED_ARCHIVE);
  if (existsSync(unpacked)) return unpacked;
  mkdirSync(debDir, { recursive: true });
  const download = () =>
    execFileSync('apt-get', ['download', '-q', PACKAGE], { cwd: debDir, stdio: ['ignore', 'inherit', 'inherit'] });
  say(`$ apt-get download ${PACKAGE} (35 MB, Debian's archive)`);
  try {
    download();
  } catch {
    if (process.getuid?.() !== 0)
      throw new Error(`apt-get download ${PACKAGE} failed; run "sudo apt-get update" and try again`);
    execFileSync('apt-get', ['update', '-q'], { stdio: ['ignore', 'inherit', 'inherit'] });
    download();
  }
  const deb = readdirSync(debDir).find((f) => f.startsWith(PACKAGE) && f.endsWith('.deb'));
  if (!deb) throw new Error(`apt-get download left no ${PACKAGE} .deb in ${debDir}`);
  execFileSync('dpkg-deb', ['-x', join(debDir, deb), join(debDir, 'root')]);
  return unpacked;
}

function decodeMp3(decoder: MPEGDecoder, bytes: Uint8Array): { samples: Int16Array; sampleRate: number } {
  const decoded = decoder.decode(bytes);
  const channel = decoded.channelData[0];
  if (!channel || decoded.samplesDecoded === 0)
    throw new Error(`MP3 decoded to nothing (${decoded.errors.length} errors)`);
  return { samples: floatToInt16(channel.subarray(0, decoded.samplesDecoded)), sampleRate: decoded.sampleRate };
}

/** Evenly spaced picks: the same `count` items every run. */
function spread<T>(items: T[], count: number): T[] {
  if (items.length <= count) return items;
  return Array.from({ length: count }, (_, i) => items[Math.floor((i * items.length) / count)] as T);
}

/** Write the set under artifacts/ (skipped when its manifest is there). */
async function build(): Promise<void> {
  const data = readFileSync(archivePath());
  const archive = readQueenArchive(data);
  if (archive.compression !== 1)
    throw new Error(`queen.1c speech compression ${archive.compression}: only MP3 (1) is read`);

  // Actors from the credits; a role credited to two actors (Klunk, Lola) is left out.
  const actorsOf = new Map<string, string[]>();
  for (const [actor, roles] of voiceCredits(entryBytes(data, archive, 'CREDIT2.CRD').toString('latin1'))) {
    for (const role of roles) actorsOf.set(role, [...(actorsOf.get(role) ?? []), actor]);
  }
  const soleActor = (role: string) => {
    const actors = actorsOf.get(role) ?? [];
    return actors.length === 1 ? (actors[0] ?? null) : null;
  };

  const candidates = new Map<string, Array<{ id: string; role: string; text: string }>>();
  const seen = new Set<string>();
  for (const name of [...archive.entries.keys()].filter((n) => n.endsWith('.DOG')).sort()) {
    const stem = name.replace(/\d*\.DOG$/, '');
    for (const part of conversationParts(entryBytes(data, archive, name))) {
      const role = part.by === 'joe' ? HERO_ROLE : CONVERSATION_ROLES[stem];
      const actor = role ? soleActor(role) : null;
      if (!role || !actor || seen.has(part.voice) || !archive.entries.has(`${part.voice}.SB`)) continue;
      seen.add(part.voice);
      // Letters and plain punctuation only: no stage directions or game symbols in the reference.
      if (!/^[A-Za-z0-9 ,.'!?-]+$/.test(part.text)) continue;
      const words = normalizeWords(part.text).length;
      if (words < SELECTION.minWords || words > SELECTION.maxWords) continue;
      candidates.set(actor, [...(candidates.get(actor) ?? []), { id: part.voice, role, text: part.text }]);
    }
  }

  mkdirSync(SET_DIR, { recursive: true });
  const decoder = new MPEGDecoder();
  await decoder.ready;
  const set: GameVoice[] = [];
  const rest: GameVoice[] = [];
  const save = async (voice: GameVoice) => {
    const pcm = decodeMp3(decoder, entryBytes(data, archive, `${voice.id}.SB`));
    await decoder.reset();
    await writeWavFile(join(SET_DIR, voice.file), pcm);
  };
  try {
    for (const [actor, lines] of [...candidates].sort(([a], [b]) => a.localeCompare(b))) {
      const usable: GameVoice[] = [];
      for (const line of lines.sort((a, b) => a.id.localeCompare(b.id))) {
        const mp3 = entryBytes(data, archive, `${line.id}.SB`);
        const pcm = decodeMp3(decoder, mp3);
        await decoder.reset();
        const seconds = pcm.samples.length / pcm.sampleRate;
        const perWord = seconds / normalizeWords(line.text).length;
        if (seconds < SELECTION.minSeconds || seconds > SELECTION.maxSeconds) continue;
        if (perWord < SELECTION.minSecondsPerWord || perWord > SELECTION.maxSecondsPerWord) continue;
        usable.push({
          id: line.id,
          actor,
          role: line.role,
          text: line.text,
          seconds: Math.round(seconds * 100) / 100,
          file: `${line.id}.wav`,
        });
      }
      const kept = spread(usable, SELECTION.perActor);
      for (const voice of kept) await save(voice);
      set.push(...kept);
      rest.push(...usable.filter((v) => !kept.includes(v)));
      say(`${actor}: ${usable.length} usable lines, ${kept.length} kept`);
    }
    const names = spread(
      rest.filter((v) => termsIn(v.text).length > 0).sort((a, b) => a.id.localeCompare(b.id)),
      NAMES_SET_SIZE,
    );
    for (const voice of names) await save(voice);
    writeFileSync(NAMES_MANIFEST, `${JSON.stringify(names, null, 1)}\n`);
    say(
      `names set: ${names.length} lines holding the game's terms, from ${new Set(names.map((v) => v.actor)).size} actors`,
    );
  } finally {
    decoder.free();
  }
  writeFileSync(MANIFEST, `${JSON.stringify(set, null, 1)}\n`);
  say(`${set.length} utterances from ${new Set(set.map((v) => v.actor)).size} actors in ${SET_DIR}`);
}

function readManifest(path: string): Array<GameVoice & { path: string }> {
  const { excluded } = reviewSchema.parse(JSON.parse(readFileSync(REVIEW_FILE, 'utf8')));
  return z
    .array(gameVoiceSchema)
    .parse(JSON.parse(readFileSync(path, 'utf8')))
    .filter((v) => !(v.id in excluded))
    .map((v) => ({ ...v, path: join(SET_DIR, v.file) }));
}

/** The set, built on first use; lines the review found unfaithful are left out. */
export async function gameVoices(): Promise<Array<GameVoice & { path: string }>> {
  if (!existsSync(MANIFEST) || !existsSync(NAMES_MANIFEST)) await build();
  return readManifest(MANIFEST);
}

/** Lines holding the game's terms (GAME_TERMS), none of them in the main set. */
export async function gameNameLines(): Promise<Array<GameVoice & { path: string }>> {
  if (!existsSync(MANIFEST) || !existsSync(NAMES_MANIFEST)) await build();
  return readManifest(NAMES_MANIFEST);
}
