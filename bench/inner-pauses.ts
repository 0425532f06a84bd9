// npm run bench:inner-pauses
// Moonshine and a pause inside what it reads (src/speech/stt/moonshine/pauses.ts). The held-out set's turns broken off
// by a pause (bench/sets/held-out-turns.ts: HELD_OUT_UNFINISHED and NUMBERS_UNFINISHED, 22 of them), each said by
// four flite voices with each of the set's pauses (0.8-1.4 s) between its two parts, on the phone path (8 kHz, μ-law
// both ways), read whole as a stream reads a turn (pushed in 20 ms frames, then finalize): with every pause as said,
// and with the pauses inside the reading shortened (500 ms, or each length of `--keep 300,700`). How often the
// reading stops at the pause (no more words read, each digit one, than were said before it), and the corpus WER.
// Writes artifacts/bench/inner-pauses.{json,md}.
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { muLawDecode, muLawEncode } from '../src/audio/g711.ts';
import { concatPcm } from '../src/audio/pcm.ts';
import { MoonshineEngine } from '../src/speech/stt/moonshine/engine.ts';
import { PAUSE_DEFAULTS } from '../src/speech/stt/moonshine/pauses.ts';
import { fliteSaid } from './flite-said.ts';
import { markdownTable, writeArtifacts } from './report.ts';
import { HELD_OUT_PAUSES_MS, HELD_OUT_UNFINISHED, NUMBERS_UNFINISHED } from './sets/held-out-turns.ts';
import { corpusWer, normalizeWords } from './wer.ts';

const RATE = 8000;
const FRAME = RATE / 50;
const VOICES = ['slt', 'rms', 'awb', 'kal'];
const loadStart = loadavg();

interface Turn {
  before: string;
  after: string;
  voice: string;
  pauseMs: number;
  line: Int16Array;
}
const turns: Turn[] = [];
for (const [before, after] of [...HELD_OUT_UNFINISHED, ...NUMBERS_UNFINISHED])
  for (const voice of VOICES) {
    const [a, b] = [fliteSaid(before, voice, RATE), fliteSaid(after, voice, RATE)];
    for (const pauseMs of HELD_OUT_PAUSES_MS) {
      const said = concatPcm([a, new Int16Array((pauseMs * RATE) / 1000), b]);
      turns.push({ before, after, voice, pauseMs, line: muLawDecode(muLawEncode(said)) });
    }
  }

/** Whether the reading holds no more words than were said before the pause (normalizeWords: a digit is a word). */
const stoppedAtPause = (turn: Turn, reading: string) =>
  normalizeWords(reading).length <= normalizeWords(turn.before).length;

const rows: Record<string, string | number>[] = [];
const stopped: Record<string, string[]> = {};
/** `--keep 300,600`: the lengths pauses are shortened to, each a reading of its own (default PAUSE_DEFAULTS.keepMs). */
const keeps = (parseArgs({ options: { keep: { type: 'string' } } }).values.keep ?? `${PAUSE_DEFAULTS.keepMs}`)
  .split(',')
  .map(Number);
const readings: [string, number | null][] = [
  ['every pause as said', null],
  ...keeps.map((ms): [string, number] => [`pauses inside shortened to ${ms} ms`, ms]),
];
for (const [name, innerPauseMs] of readings) {
  const engine = new MoonshineEngine({ innerPauseMs });
  const stream = await engine.open({ sampleRate: RATE, language: 'en-US' });
  const pairs: { reference: string; hypothesis: string }[] = [];
  stopped[name] = [];
  for (const turn of turns) {
    for (let i = 0; i < turn.line.length; i += FRAME) stream.push(turn.line.subarray(i, i + FRAME));
    const reading = (await stream.finalize()).text;
    pairs.push({ reference: `${turn.before} ${turn.after}`, hypothesis: reading });
    if (stoppedAtPause(turn, reading))
      stopped[name].push(`${turn.voice} ${turn.pauseMs} ms: "${turn.before} … ${turn.after}" → "${reading}"`);
  }
  await stream.close();
  await engine.close();
  const row = {
    reading: name,
    turns: turns.length,
    'stopped at the pause': stopped[name].length,
    WER: `${(corpusWer(pairs) * 100).toFixed(1)}%`,
  };
  rows.push(row);
  console.log(row);
}

const md = [
  '# bench:inner-pauses — Moonshine and a pause inside what it reads',
  '',
  markdownTable(rows),
  '',
  ...Object.entries(stopped).flatMap(([name, lines]) => [`Stopped at the pause, ${name}:`, '', ...lines, '']),
  `load average ${loadStart.map((x) => x.toFixed(2)).join(' ')} at the start, ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')} at the end, ${availableParallelism()} cores`,
].join('\n');
writeArtifacts('inner-pauses', { when: new Date().toISOString(), rows, stopped }, md);
console.log(md);
process.exit(0);
