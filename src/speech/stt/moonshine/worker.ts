// One Moonshine recogniser per worker thread: utterances arrive one at a time, are brought to
// the model's 16 kHz and transcribed; the engine on the main thread queues the rest.
import { parentPort, workerData } from 'node:worker_threads';
import { z } from 'zod';
import { resample } from '../../../audio/resampler.ts';
import { isSttError } from '../errors.ts';
import type { FromMoonshineWorker, ToMoonshineWorker } from './protocol.ts';
import type { PhraseBias } from './phrase-bias.ts';
import {
  MOONSHINE_DECODING,
  MOONSHINE_MODEL,
  MOONSHINE_SIZE_NAMES,
  MoonshineRecogniser,
  moonshinePhraseBias,
} from './recogniser.ts';

const port = parentPort;
if (!port) throw new Error('moonshine worker must run in a worker thread');
const { modelDir, model, phraseTokenBonus } = z
  .object({
    modelDir: z.string(),
    model: z.enum(MOONSHINE_SIZE_NAMES),
    phraseTokenBonus: z.number().positive().optional(),
  })
  .parse(workerData);
const send = (msg: FromMoonshineWorker): void => port.postMessage(msg);

// The thread runs at the process's priority. It ran at nice 10, to yield to the main thread that paces every call's
// audio, but nice is machine-wide: beside other busy processes its readings starved (4 calls beside three CPU
// burners: voice-to-voice p50 4.4-4.8 s, 0.6-0.7 s at nice 0), while with 16 calls on a quiet machine the pacing
// barely differed (bench/README.md, "Recogniser threads at normal priority").

let recogniser: MoonshineRecogniser;
try {
  recogniser = await MoonshineRecogniser.load(modelDir, model);
} catch (err) {
  send({ type: 'failed', code: isSttError(err) ? err.code : 'STT_MODEL_INVALID', message: (err as Error).message });
  process.exit(1);
}
send({ type: 'ready' });

// A call sends the same hints with every utterance: the last list's token trie is kept.
let hints: { key: string; bias: PhraseBias } | null = null;
function biasFor(phrases: string[]): PhraseBias | undefined {
  if (phrases.length === 0) return undefined;
  const key = phrases.join('\n');
  if (hints?.key !== key) hints = { key, bias: moonshinePhraseBias(phrases, phraseTokenBonus) };
  return hints.bias;
}

// The engine sends one utterance at a time; `work` is the one under way, `current` its job and how to stop it.
let work: Promise<void> = Promise.resolve();
let current: { job: number; controller: AbortController } | null = null;
port.on('message', (msg: ToMoonshineWorker) => {
  if (msg.type === 'cancel') {
    // The model runs a step at a time with the event loop turning between steps (onnxruntime-node runs each from
    // setImmediate), so this arrives while the reading is under way.
    if (current?.job === msg.job) current.controller.abort();
    return;
  }
  if (msg.type === 'close') {
    // Terminating a thread inside an onnxruntime call can abort the whole process (its binding
    // throws a C++ exception while the thread's environment is torn down): the model is released
    // between utterances and the thread ends itself.
    void work.then(async () => {
      await recogniser.close().catch(() => undefined);
      process.exit(0);
    });
    return;
  }
  const controller = new AbortController();
  current = { job: msg.job, controller };
  work = (async () => {
    try {
      const pcm =
        msg.sampleRate === MOONSHINE_MODEL.sampleRate
          ? msg.samples
          : resample(msg.samples, msg.sampleRate, MOONSHINE_MODEL.sampleRate);
      send({
        type: 'result',
        job: msg.job,
        text: await recogniser.transcribe(pcm, MOONSHINE_DECODING, biasFor(msg.phrases), controller.signal),
      });
    } catch (err) {
      send({
        type: 'error',
        job: msg.job,
        code: isSttError(err) ? err.code : 'STT_ENGINE_CRASHED',
        message: (err as Error).message,
      });
    }
  })();
});
