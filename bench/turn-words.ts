// npm run bench:turn-words [-- --stt-model tiny|base]
// How the semantic end of turn reads phrases held out from bench:turns: flite's four voices say
// 16 phrases that end in a trailing "and", 16 that end in another word that says more is coming,
// and 16 finished ones, through the phone path (8 kHz μ-law, 300 ms of quiet after); the
// recogniser reads each as a pause reading would, and turnShape judges the words. It reports how
// many unfinished phrases would be waited for (unfinished or pausing) and how many finished ones
// would be held (anything but finished), with every reading that was judged wrong. It checks rules
// against phrases the call bench never plays, so a rule fitted to the bench shows here.
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { muLawDecode, muLawEncode } from '../src/audio/g711.ts';
import { turnShape } from '../src/call/caller/end-of-turn.ts';
import { MoonshineEngine } from '../src/speech/stt/moonshine/engine.ts';
import { FliteTtsEngine } from '../src/speech/tts/flite.ts';
import { FINISHED, OTHER_UNFINISHED, TRAILING_AND, VOICES } from './sets/turn-words-phrases.ts';

const { values } = parseArgs({ options: { 'stt-model': { type: 'string' } } });
const model = z.enum(['tiny', 'base']).default('tiny').parse(values['stt-model']);

const tts = new FliteTtsEngine();
const stt = new MoonshineEngine({ model, workers: 2 });

async function read(text: string, voice: string): Promise<string> {
  const chunks: Int16Array[] = [];
  for await (const chunk of tts.synthesize(text, { sampleRate: 8000, voiceId: voice })) chunks.push(chunk.samples);
  const spoken = new Int16Array(chunks.reduce((n, c) => n + c.length, 0) + 2400);
  let at = 0;
  for (const c of chunks) {
    spoken.set(c, at);
    at += c.length;
  }
  const phone = muLawDecode(muLawEncode(spoken));
  const stream = await stt.open({ sampleRate: 8000, language: 'en-US' });
  for (let i = 0; i < phone.length; i += 160) stream.push(phone.subarray(i, i + 160));
  const { text: heard } = await stream.finalize();
  await stream.close();
  return heard;
}

const rows: string[] = [];
const wrong: string[] = [];
for (const [label, phrases, finished] of [
  ['trailing "and"', TRAILING_AND, false],
  ['another carry-on word', OTHER_UNFINISHED, false],
  ['finished', FINISHED, true],
] as const) {
  let right = 0;
  let total = 0;
  for (const voice of VOICES) {
    for (const text of phrases) {
      const heard = await read(text, voice);
      const shape = turnShape(heard);
      const ok = finished ? shape === 'finished' : shape === 'unfinished' || shape === 'pausing';
      total++;
      if (ok) right++;
      else wrong.push(`  ${label}, ${voice}: "${text}" heard as ${JSON.stringify(heard)} → ${shape}`);
    }
  }
  rows.push(
    `| ${label} | ${total} | ${finished ? `${total - right} held (${(((total - right) / total) * 100).toFixed(1)}%)` : `${right} waited for (${((right / total) * 100).toFixed(1)}%)`} |`,
  );
}
await tts.close();
await stt.close();
console.log(`# bench:turn-words — Moonshine ${model}, flite voices ${VOICES.join(', ')}, phone path\n`);
console.log('| phrases | readings | judged |\n|---|---|---|');
for (const row of rows) console.log(row);
console.log(
  `\nJudged wrong:\n${wrong.join('\n')}\n\nload average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')} at the end`,
);
