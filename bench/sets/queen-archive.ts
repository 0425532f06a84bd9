// Reads the speech and dialogue of "Flight of the Amazon Queen" (Debian package
// flight-of-the-amazon-queen, freeware talkie version, 1995): a human speech test set of a dozen
// professional voice actors. The data file queen.1c is one archive: a table of named entries,
// then their bytes. Each conversation is a .DOG entry holding the lines of Joe (the hero) and of
// the person he talks to; each spoken part of a line is an MP3 entry (.SB) named from the
// conversation's key, the line's id, who speaks and the part's number. The layout was learnt from
// reading ScummVM's engine for the game; this is our own reader of it.

/** Where one named entry's bytes sit in the archive. */
export interface ArchiveEntry {
  offset: number;
  size: number;
}

export interface QueenArchive {
  /** 1 = speech as MP3 (the only kind Debian ships). */
  compression: number;
  entries: Map<string, ArchiveEntry>;
}

const ARCHIVE_MAGIC = 'QTBL';
const TABLE_START = 15;
const TABLE_ROW_BYTES = 21;
const NAME_BYTES = 12;

/** The table of entries at the head of queen.1c. */
export function readQueenArchive(data: Buffer): QueenArchive {
  if (data.length < TABLE_START || data.toString('latin1', 0, 4) !== ARCHIVE_MAGIC) {
    throw new Error(`not a queen.1c archive: it should start with "${ARCHIVE_MAGIC}"`);
  }
  const compression = data.readUInt8(12);
  const count = data.readUInt16BE(13);
  const end = TABLE_START + count * TABLE_ROW_BYTES;
  if (end > data.length) throw new Error(`archive table of ${count} entries runs past the end of the file`);
  const entries = new Map<string, ArchiveEntry>();
  for (let row = TABLE_START; row < end; row += TABLE_ROW_BYTES) {
    const rawName = data.toString('latin1', row, row + NAME_BYTES);
    const name = rawName.slice(0, rawName.indexOf('\0') < 0 ? NAME_BYTES : rawName.indexOf('\0'));
    // Byte 12 of a row names the disk the entry came from: one archive here, so unused.
    const offset = data.readUInt32BE(row + 13);
    const size = data.readUInt32BE(row + 17);
    if (offset + size > data.length) throw new Error(`entry ${name} runs past the end of the archive`);
    entries.set(name, { offset, size });
  }
  return { compression, entries };
}

export function entryBytes(data: Buffer, archive: QueenArchive, name: string): Buffer {
  const entry = archive.entries.get(name);
  if (!entry) throw new Error(`no entry ${name} in the archive`);
  return data.subarray(entry.offset, entry.offset + entry.size);
}

/** One voiced part of a dialogue line. */
export interface SpokenPart {
  /** The MP3 entry's name without ".SB", e.g. "020006P1". */
  voice: string;
  /** Joe, or the person of the conversation (named by the .DOG file). */
  by: 'joe' | 'person';
  text: string;
}

// Conversation files start with a 20-byte header the game skips.
const DOG_HEADER_BYTES = 20;
// Fixed fields of a conversation, then 96 bytes per level of its dialogue tree before Joe's lines.
const DIALOGUE_TREE_START = 32;
const DIALOGUE_LEVEL_BYTES = 96;
// Commands inside a line, e.g. "*AS": a new spoken part starts after each. XY carries 11 characters
// of screen position; GD and GM (gestures) end a part that is not voiced.
const COMMAND_MARK = '*';
const SILENT_COMMANDS = new Set(['GD', 'GM']);
const POSITION_COMMAND = 'XY';
const POSITION_CHARS = 11;

class DialogueReader {
  constructor(private readonly bytes: Buffer) {}

  int16(at: number): number {
    if (at + 2 > this.bytes.length) throw new Error(`conversation ends at ${this.bytes.length}, read at ${at}`);
    return this.bytes.readInt16BE(at);
  }

  uint16(at: number): number {
    return this.int16(at) & 0xffff;
  }

  /** A length-prefixed string; the next field starts at a multiple of `align` (the game's rule). */
  string(at: number, align: number): { text: string; next: number } {
    const length = this.bytes[at];
    if (length === undefined) throw new Error(`conversation ends before the string at ${at}`);
    if (length === 0) return { text: '', next: at + 1 };
    const start = at + 1;
    if (start + length > this.bytes.length) throw new Error(`string at ${at} runs past the conversation's end`);
    const end = start + length;
    return { text: this.bytes.toString('latin1', start, end), next: Math.ceil(end / align) * align };
  }

  /** A table of `count` lines: per line 2 unused bytes, the line's id, then the text. */
  lines(at: number, count: number): Array<{ id: number; text: string }> {
    const out: Array<{ id: number; text: string }> = [];
    let cursor = at;
    for (let i = 0; i < count; i++) {
      const id = this.int16(cursor + 2);
      const { text, next } = this.string(cursor + 4, 4);
      out.push({ id, text });
      cursor = next;
    }
    return out;
  }
}

/** The voiced parts of a line in order, numbered from 1 as the game names their sound files. */
export function spokenParts(line: string): Array<{ part: number; text: string }> {
  const parts: Array<{ part: number; text: string }> = [];
  let index = 0;
  let start = 0;
  let i = 0;
  while (i < line.length) {
    if (line[i] !== COMMAND_MARK) {
      i++;
      continue;
    }
    const command = line.slice(i + 1, i + 3);
    if (!SILENT_COMMANDS.has(command)) parts.push({ part: index + 1, text: line.slice(start, i) });
    index++;
    i += 3 + (command === POSITION_COMMAND ? POSITION_CHARS : 0);
    start = i;
  }
  if (start < line.length) parts.push({ part: index + 1, text: line.slice(start) });
  return parts.map((p) => ({ part: p.part, text: p.text.trim() })).filter((p) => p.text.length > 0);
}

/** "%2d%4X<who>%X" with spaces as zeros: the sound file of one part of one line. */
function voiceName(key: number, lineId: string, who: 'J' | 'P', part: number): string {
  return `${String(key).padStart(2, '0')}${lineId}${who}${part.toString(16).toUpperCase()}`;
}

const hexId = (id: number) => (id & 0xffff).toString(16).toUpperCase().padStart(4, '0');

/**
 * Every voiced part of one conversation (the .DOG entry's bytes, header included). Names of parts
 * that have no sound file (a line cut from the recording) are still returned: the caller keeps
 * those the archive has.
 */
export function conversationParts(dog: Buffer): SpokenPart[] {
  const reader = new DialogueReader(dog.subarray(DOG_HEADER_BYTES));
  const levels = Math.abs(reader.int16(0));
  const key = reader.int16(4);
  const joeCount = reader.int16(6);
  const personCount = reader.int16(8);
  const personLines = reader.uint16(22);
  const secondMeeting = reader.uint16(26);
  const joeLines = DIALOGUE_TREE_START + levels * DIALOGUE_LEVEL_BYTES;

  const lines: Array<{ id: string; by: 'joe' | 'person'; text: string }> = [
    ...reader.lines(personLines, personCount).map((l) => ({ id: hexId(l.id), by: 'person' as const, text: l.text })),
    ...reader.lines(joeLines, joeCount).map((l) => ({ id: hexId(l.id), by: 'joe' as const, text: l.text })),
  ];
  // Joe's opening line (when the table's first id is 0) is voiced under the id SSSS; the
  // lines for meeting the person again under XXXX.
  if (reader.uint16(joeLines + 2) === 0)
    lines.push({ id: 'SSSS', by: 'joe', text: reader.string(joeLines + 4, 2).text });
  const again = reader.string(secondMeeting, 2);
  lines.push({ id: 'XXXX', by: 'person', text: again.text });
  lines.push({ id: 'XXXX', by: 'joe', text: reader.string(again.next, 2).text });

  const parts: SpokenPart[] = [];
  for (const line of lines) {
    for (const { part, text } of spokenParts(line.text)) {
      parts.push({ voice: voiceName(key, line.id, line.by === 'joe' ? 'J' : 'P', part), by: line.by, text });
    }
  }
  return parts;
}

/**
 * Actor → the roles they voiced, from the game's own credits entry (CREDIT2.CRD): under each
 * "Voice Artists" heading, an actor's name at indent 30 is followed by their roles at indent 222.
 */
export function voiceCredits(credits: string): Map<string, string[]> {
  const cast = new Map<string, string[]>();
  let inCast = false;
  let indent = 0;
  let actor: string | null = null;
  for (const raw of credits.split(/\r?\n/)) {
    const line = raw.trim();
    const indentMatch = /^\.i (\d+)$/.exec(line);
    if (indentMatch) {
      indent = Number(indentMatch[1]);
      continue;
    }
    if (line.startsWith('.') || line === '') continue;
    if (indent === 15) {
      inCast = line === 'Voice Artists';
      actor = null;
      continue;
    }
    if (!inCast) continue;
    if (indent === 30) {
      actor = line;
      cast.set(actor, []);
    } else if (indent === 222 && actor) {
      cast.get(actor)?.push(line);
    }
  }
  return cast;
}
