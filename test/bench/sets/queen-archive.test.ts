import { describe, expect, it } from 'vitest';
import {
  conversationParts,
  entryBytes,
  readQueenArchive,
  spokenParts,
  voiceCredits,
} from '../../../bench/sets/queen-archive.ts';

/** queen.1c's layout: "QTBL", 8 bytes of version, compression, entry count, 21-byte rows, then data. */
function archiveOf(files: Array<[string, Buffer]>, compression = 1): Buffer {
  const tableEnd = 15 + files.length * 21;
  const head = Buffer.alloc(tableEnd);
  head.write('QTBL', 0, 'latin1');
  head.write('CEM10', 4, 'latin1');
  head.writeUInt8(compression, 12);
  head.writeUInt16BE(files.length, 13);
  let offset = tableEnd;
  files.forEach(([name, bytes], i) => {
    const row = 15 + i * 21;
    head.write(name, row, 'latin1');
    head.writeUInt32BE(offset, row + 13);
    head.writeUInt32BE(bytes.length, row + 17);
    offset += bytes.length;
  });
  return Buffer.concat([head, ...files.map(([, bytes]) => bytes)]);
}

/** Builds a conversation body field by field; strings are aligned as the game aligns them. */
class DogWriter {
  bytes = Buffer.alloc(1024);
  cursor = 0;

  string(text: string, align: number): void {
    this.bytes.writeUInt8(text.length, this.cursor);
    this.bytes.write(text, this.cursor + 1, 'latin1');
    const end = this.cursor + 1 + text.length;
    this.cursor = text.length === 0 ? end : Math.ceil(end / align) * align;
  }

  table(lines: Array<[number, string]>): void {
    for (const [id, text] of lines) {
      this.bytes.writeInt16BE(id, this.cursor + 2);
      this.cursor += 4;
      this.string(text, 4);
    }
  }
}

/** A conversation with one dialogue level, talk key 7, and the given tables. */
function conversation(person: Array<[number, string]>, joe: Array<[number, string]>, again: [string, string]): Buffer {
  const w = new DogWriter();
  w.bytes.writeInt16BE(-1, 0); // a negative level count: the player may not leave; its size is the same
  w.bytes.writeInt16BE(7, 4);
  w.bytes.writeInt16BE(joe.length, 6);
  w.bytes.writeInt16BE(person.length, 8);
  w.cursor = 32 + 96; // Joe's lines follow the one-level dialogue tree
  w.table(joe);
  w.bytes.writeUInt16BE(w.cursor, 22);
  w.table(person);
  w.bytes.writeUInt16BE(w.cursor, 26);
  w.string(again[0], 2);
  w.string(again[1], 2);
  return Buffer.concat([Buffer.alloc(20), w.bytes.subarray(0, w.cursor)]);
}

describe('queen.1c archive', () => {
  it('reads each entry by name from the table at its head', () => {
    const data = archiveOf([
      ['AND1.DOG', Buffer.from('dialogue')],
      ['070001P1.SB', Buffer.from([1, 2, 3])],
    ]);
    const archive = readQueenArchive(data);
    expect(archive.compression).toBe(1);
    expect([...archive.entries.keys()]).toEqual(['AND1.DOG', '070001P1.SB']);
    expect(entryBytes(data, archive, 'AND1.DOG').toString()).toBe('dialogue');
    expect([...entryBytes(data, archive, '070001P1.SB')]).toEqual([1, 2, 3]);
    expect(() => entryBytes(data, archive, 'NONE.SB')).toThrow(/no entry NONE\.SB/);
  });

  it('refuses a file that is not the archive or whose entries run past its end', () => {
    expect(() => readQueenArchive(Buffer.from('RIFF0000WAVEfmt '))).toThrow(/not a queen\.1c archive/);
    const data = archiveOf([['A.SB', Buffer.from('abc')]]);
    expect(() => readQueenArchive(data.subarray(0, data.length - 1))).toThrow(/A\.SB runs past the end/);
  });
});

describe('spoken parts of a line', () => {
  it('starts a new voiced part after each command and numbers parts as the sound files are numbered', () => {
    expect(spokenParts('Hello.*ASHow are you?')).toEqual([
      { part: 1, text: 'Hello.' },
      { part: 2, text: 'How are you?' },
    ]);
  });

  it('counts a gesture (GD, GM) without voicing the words before it', () => {
    expect(spokenParts('Hmm.*GDWell...*ASI never!')).toEqual([
      { part: 2, text: 'Well...' },
      { part: 3, text: 'I never!' },
    ]);
  });

  it('skips the eleven position characters of an XY command', () => {
    expect(spokenParts('Look!*XY0123456789AOver there.')).toEqual([
      { part: 1, text: 'Look!' },
      { part: 2, text: 'Over there.' },
    ]);
  });
});

describe('a conversation file', () => {
  it("names each part's sound file from the talk key, the line id, who speaks and the part", () => {
    const dog = conversation(
      [
        [0x1e, 'You again?'],
        [0xa4, 'Go away.*ASNow!'],
      ],
      [
        [0, 'Hi there.'],
        [0x2a, 'Nice plane.'],
      ],
      ['Back so soon?', 'I forgot something.'],
    );
    expect(conversationParts(dog)).toEqual([
      { voice: '07001EP1', by: 'person', text: 'You again?' },
      { voice: '0700A4P1', by: 'person', text: 'Go away.' },
      { voice: '0700A4P2', by: 'person', text: 'Now!' },
      { voice: '070000J1', by: 'joe', text: 'Hi there.' },
      { voice: '07002AJ1', by: 'joe', text: 'Nice plane.' },
      // Joe's opening line (the first id is 0) is voiced as SSSS; meeting again as XXXX.
      { voice: '07SSSSJ1', by: 'joe', text: 'Hi there.' },
      { voice: '07XXXXP1', by: 'person', text: 'Back so soon?' },
      { voice: '07XXXXJ1', by: 'joe', text: 'I forgot something.' },
    ]);
  });

  it('fails with the offset when a table runs past the end', () => {
    const dog = conversation([[1, 'Hello.']], [], ['', '']);
    dog.writeInt16BE(5, 20 + 8); // five person lines where there is one
    expect(() => conversationParts(dog)).toThrow(/conversation('s)? end/);
  });
});

describe('voice credits', () => {
  it('maps each actor under a Voice Artists heading to the roles listed under them', () => {
    const credits = [
      '.i 15',
      'Sound Mixer',
      '.i 30',
      ' Ben Baird',
      '.i 15',
      'Voice Artists',
      '',
      '.i 30',
      'Brad Lavelle',
      '.i 222',
      '    Joe King',
      '     Commander Rocket Characters',
      '.p 5',
      '.i 30',
      'Jon Coleman',
      '.i 222',
      '    Trader Bob',
      '.i 15',
      'Quality Assurance',
      '.i 30',
      ' Graeme Boxall',
    ].join('\r\n');
    expect(Object.fromEntries(voiceCredits(credits))).toEqual({
      'Brad Lavelle': ['Joe King', 'Commander Rocket Characters'],
      'Jon Coleman': ['Trader Bob'],
    });
  });
});
