// Run by worker-exit.test.ts in a process of its own, with nothing else holding it open: a flite
// sentence is cut off mid-way (its worker still inside native synthesis) and the engine closed at
// once, 12 times. Prints how many closes settled; if one never settles the process ends with
// exit code 13 before printing.
import { FliteTtsEngine } from '../../src/speech/tts/flite.ts';

const LONG =
  'Our office on the corner of Main Street and Fifth Avenue is open from nine in the morning until half past five in the evening every weekday';
let closed = 0;
for (let i = 0; i < 12; i++) {
  const flite = new FliteTtsEngine();
  const controller = new AbortController();
  const sentence = flite
    .synthesize(LONG, { sampleRate: 16000, voiceId: 'slt', signal: controller.signal })
    [Symbol.asyncIterator]();
  await sentence.next();
  controller.abort();
  await sentence.next();
  await new Promise((resolve) => setTimeout(resolve, i % 3));
  await flite.close();
  closed++;
}
process.stdout.write(`closed ${closed}\n`);
