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

const { values } = parseArgs({ options: { 'stt-model': { type: 'string' } } });
const model = z.enum(['tiny', 'base']).default('tiny').parse(values['stt-model']);

const TRAILING_AND = [
  'I need a new filter and',
  'Can you check my balance and',
  'I want to pay my bill and',
  'Please send the invoice and',
  'We have two kids and',
  'My wife called yesterday and',
  'I ordered a blue jacket and',
  'The delivery was late and',
  'I would like a haircut and',
  'She booked a table for four and',
  'My car makes a noise and',
  'I moved last month and',
  'The printer is broken and',
  'I lost my card and',
  'Book me for Friday and',
  'I tried to log in and',
];
const OTHER_UNFINISHED = [
  'I am calling because',
  'The problem is that',
  'Can I book it for',
  'I would like to speak with',
  'My email address is',
  'I was hoping to',
  'Could you send it to my',
  'The appointment is on',
  'I think the',
  'We live near the',
  'It started when',
  'I need to change the',
  'So basically um',
  'I was wondering if',
  'Is there a way to',
  'The reason I called is',
];
const FINISHED = [
  'I would like to cancel my subscription.',
  'Can you tell me your opening hours?',
  'My order number is on the receipt.',
  'That sounds good to me.',
  'I will call back tomorrow.',
  'Do you deliver on weekends?',
  'Please put me through to billing.',
  'The package never arrived.',
  'I need a plumber today.',
  'How long will it take?',
  'Thank you very much.',
  'I paid with my credit card.',
  'Is the store open until the end?',
  'My son hurt his hand.',
  'We want the second one.',
  'No, that is everything.',
];
const VOICES = ['slt', 'rms', 'awb', 'kal'];

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
