// Run as its own process by moonshine.test.ts: closes the engine while utterances are being read,
// round after round, then while its workers are still loading the model. An abort (onnxruntime
// throwing while a worker is torn down) kills this process, which the test sees as a non-zero exit;
// the workers the engine terminated are counted, since a terminate only aborts when it lands
// inside an onnxruntime call.
import { Worker } from 'node:worker_threads';
import { MoonshineEngine } from '../../../../src/speech/stt/moonshine/engine.ts';

let terminated = 0;
const terminate = Worker.prototype.terminate;
Worker.prototype.terminate = function (this: Worker) {
  terminated++;
  return terminate.call(this);
};

const rounds = Number(process.argv[2] ?? 3);
// Eight seconds of loud noise: the model reads it for a while, long enough to be closed mid-read.
let seed = 1;
const noise = new Int16Array(16000 * 8).map(() => ((seed = (seed * 48271) % 2147483647) % 8000) - 4000);
for (let round = 0; round < rounds; round++) {
  const engine = new MoonshineEngine({ workers: 2 });
  const streams = await Promise.all([0, 1].map(() => engine.open({ sampleRate: 16000, language: 'en' })));
  for (const stream of streams) {
    stream.push(noise);
    void stream.finalize().catch(() => undefined);
  }
  await new Promise((resolve) => setTimeout(resolve, 40 + round * 60));
  await engine.close();
}
// Closed as it starts: the first worker may be loading, and the second is once open() is done.
for (const wait of [0, 300, 600]) {
  const engine = new MoonshineEngine({ workers: 2 });
  const opened = engine.open({ sampleRate: 16000, language: 'en' }).catch(() => undefined);
  await new Promise((resolve) => setTimeout(resolve, wait));
  await engine.close();
  await opened;
}
process.stdout.write(`closed every round; workers terminated: ${terminated}\n`);
