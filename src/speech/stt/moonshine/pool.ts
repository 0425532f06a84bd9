// Moonshine's worker threads in this process: each loads the model once and reads one utterance
// at a time; utterances wait in one queue, first come first read, and one whose signal fires is
// taken out of it, or stopped at the model's next step if a thread already has it.
import { Worker } from 'node:worker_threads';
import { SttError } from '../errors.ts';
import type { FromMoonshineWorker, ToMoonshineWorker } from './protocol.ts';
import type { UtteranceReader } from './reader.ts';
import type { MoonshineSize } from './recogniser.ts';

export interface MoonshineThreadPoolOptions {
  model: MoonshineSize;
  modelDir: string;
  threads: number;
  /** Bonus per token of a phrase hint (nats; PHRASE_BIAS_DEFAULTS.tokenBonus). */
  phraseTokenBonus?: number;
}

interface Job {
  samples: Int16Array;
  sampleRate: number;
  /** The stream's phrase hints (stt.phrases). */
  phrases: readonly string[];
  resolve: (text: string) => void;
  reject: (err: SttError) => void;
  settled: boolean;
}

interface WorkerSlot {
  worker: Worker;
  ready: boolean;
  job: (Job & { id: number }) | null;
}

/**
 * Asks a worker to finish what it is doing (loading the model or reading an utterance, both
 * bounded), release the model and exit, and resolves once it has. It is never terminated:
 * terminating a thread inside an onnxruntime call aborts the whole process (its binding throws a
 * C++ exception it cannot deliver while the thread's environment is torn down), and a worker
 * still loading the model on a loaded machine can be inside one for many seconds.
 */
function stopWorker(worker: Worker): Promise<void> {
  return new Promise((resolve) => {
    worker.once('exit', () => resolve());
    // Held until then: an unref'd worker still loading when the process ends is torn down inside onnxruntime as well.
    worker.ref();
    const close: ToMoonshineWorker = { type: 'close' };
    worker.postMessage(close);
  });
}

export class MoonshineThreadPool implements UtteranceReader {
  readonly model: MoonshineSize;
  private readonly slots: WorkerSlot[] = [];
  private readonly queue: Job[] = [];
  private nextJob = 1;
  /** The model failed to load: every ready() and queued utterance fails with it until close(). */
  private loadError: SttError | null = null;
  private firstReady: Promise<void> | null = null;

  constructor(private readonly o: MoonshineThreadPoolOptions) {
    this.model = o.model;
  }

  async ready(): Promise<void> {
    if (this.loadError) throw this.loadError;
    // The whole pool starts at once (a worker takes ~1 s to load the model, too long to wait for
    // when callers first finish together); the first stream waits for the first worker only.
    this.firstReady ??= new Promise((resolve, reject) => {
      for (let i = this.slots.length; i < this.o.threads; i++) {
        const slot = this.spawn();
        slot.worker.on('message', (msg: FromMoonshineWorker) => {
          if (msg.type === 'ready') resolve();
          else if (msg.type === 'failed') reject(new SttError(msg.code, msg.message));
        });
        slot.worker.once('exit', () => {
          if (this.slots.length === 0)
            reject(this.loadError ?? new SttError('STT_ENGINE_CRASHED', 'moonshine worker exited while loading'));
        });
      }
    });
    try {
      await this.firstReady;
    } catch (err) {
      this.firstReady = null;
      throw err;
    }
  }

  read(samples: Int16Array, sampleRate: number, phrases: readonly string[], signal?: AbortSignal): Promise<string> {
    if (this.loadError) return Promise.reject(this.loadError);
    return new Promise((resolve, reject) => {
      // A copy goes to the thread: the caller's array stays whole, and a buffer already handed over is never sent
      // again (postMessage drops a message whose transfer list holds a detached buffer, and the reading would wait
      // forever).
      const job: Job = { samples: samples.slice(), sampleRate, phrases, resolve, reject, settled: false };
      const settle = (): boolean => {
        if (job.settled) return false;
        job.settled = true;
        signal?.removeEventListener('abort', onAbort);
        return true;
      };
      const onAbort = (): void => {
        if (!settle()) return;
        const queued = this.queue.indexOf(job);
        if (queued >= 0) this.queue.splice(queued, 1);
        // Being read: the thread stops and answers, and is free for the next utterance then.
        const slot = this.slots.find((s) => s.job === job);
        if (slot?.job) {
          const cancel: ToMoonshineWorker = { type: 'cancel', job: slot.job.id };
          slot.worker.postMessage(cancel);
        }
        reject(new SttError('STT_ABORTED', 'transcription cancelled'));
      };
      job.resolve = (text) => settle() && resolve(text);
      job.reject = (err) => settle() && reject(err);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(job);
      this.dispatch();
    });
  }

  private spawn(): WorkerSlot {
    const workerData = {
      modelDir: this.o.modelDir,
      model: this.o.model,
      ...(this.o.phraseTokenBonus === undefined ? {} : { phraseTokenBonus: this.o.phraseTokenBonus }),
    };
    const worker = new Worker(new URL('./worker-entry.mjs', import.meta.url), { workerData });
    worker.unref();
    const slot: WorkerSlot = { worker, ready: false, job: null };
    this.slots.push(slot);
    worker.on('message', (msg: FromMoonshineWorker) => this.onMessage(slot, msg));
    const gone = (why: string): void => {
      const at = this.slots.indexOf(slot);
      if (at < 0) return;
      this.slots.splice(at, 1);
      slot.job?.reject(new SttError('STT_ENGINE_CRASHED', `moonshine worker died: ${why}`));
      slot.job = null;
      if (this.loadError) for (const job of this.queue.splice(0)) job.reject(this.loadError);
      else this.dispatch();
    };
    worker.on('error', (err) => gone(err.message));
    worker.on('exit', (code) => gone(`exit code ${code}`));
    return slot;
  }

  private onMessage(slot: WorkerSlot, msg: FromMoonshineWorker): void {
    switch (msg.type) {
      case 'ready':
        slot.ready = true;
        break;
      case 'failed':
        this.loadError = new SttError(msg.code, msg.message);
        return;
      case 'result':
      case 'error': {
        const job = slot.job;
        slot.job = null;
        if (job?.id === msg.job) {
          if (msg.type === 'result') job.resolve(msg.text);
          else job.reject(new SttError(msg.code, msg.message));
        }
        break;
      }
    }
    this.dispatch();
  }

  /** Hands queued utterances to idle workers, starting workers up to the pool's size. */
  private dispatch(): void {
    if (this.loadError) return;
    for (const slot of this.slots) {
      if (!slot.ready || slot.job) continue;
      let job = this.queue.shift();
      while (job?.settled) job = this.queue.shift();
      if (!job) return;
      const running = Object.assign(job, { id: this.nextJob++ });
      slot.job = running;
      const msg: ToMoonshineWorker = {
        type: 'transcribe',
        job: running.id,
        samples: job.samples,
        sampleRate: job.sampleRate,
        phrases: [...job.phrases],
      };
      slot.worker.postMessage(msg, [job.samples.buffer as ArrayBuffer]);
    }
    const loading = this.slots.filter((s) => !s.ready).length;
    if (this.firstReady && this.queue.length > loading && this.slots.length < this.o.threads) this.spawn();
  }

  async close(): Promise<void> {
    this.firstReady = null;
    this.loadError = null;
    const err = new SttError('STT_ENGINE_CRASHED', 'moonshine engine closed');
    for (const job of this.queue.splice(0)) job.reject(err);
    await Promise.all(
      this.slots.splice(0).map((slot) => {
        slot.job?.reject(err);
        return stopWorker(slot.worker);
      }),
    );
  }
}
