// Run as its own process by moonshine.test.ts: closes the engine while utterances are being read,
// round after round. An abort (onnxruntime throwing while a worker is torn down) kills this
// process, which the test sees as a non-zero exit.
import { MoonshineEngine } from '../../../../src/speech/stt/moonshine/engine.ts';

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
process.stdout.write('closed every round\n');
