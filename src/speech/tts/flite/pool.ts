// The flite worker threads every FliteTtsEngine of a process shares (voices and flite's state
// are per process anyway). A job is one piece of text; a worker speaks one job at a time and jobs
// wait in order for a free worker, so concurrent calls interleave piece by piece. A worker that
// dies fails its job with TTS_SYNTHESIS_FAILED and is replaced on the next job.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { SpeechError } from '../../errors.ts';
import { terminateWorker } from '../../worker-exit.ts';
import type { FliteWorkerData, FromWorker, ToWorker } from './protocol.ts';

export interface JobSink {
  onAudio(samples: Int16Array, sampleRate: number): void;
  /** The piece was spoken to its end. */
  onDone(): void;
  onError(err: SpeechError): void;
}

let nextJid = 1;

export class FliteJob {
  readonly jid = nextJid++;
  /** Shared with the worker: the addon checks it between audio blocks. */
  readonly cancelFlag = new Int32Array(new SharedArrayBuffer(4));
  /** Cancelled or finished: the sink hears nothing more. */
  over = false;

  constructor(
    readonly voice: string,
    readonly text: string,
    readonly stretch: number,
    readonly sink: JobSink,
  ) {}
}

class WorkerSlot {
  readonly worker: Worker;
  job: FliteJob | null = null;
  dead = false;

  constructor(addonPath: string, onIdle: (slot: WorkerSlot) => void, onDead: (slot: WorkerSlot) => void) {
    const data: FliteWorkerData = { addonPath };
    this.worker = new Worker(new URL('./worker-entry.mjs', import.meta.url), { workerData: data });
    // An idle worker must not keep the process alive; a busy one does (see start()).
    this.worker.unref();
    this.worker.on('message', (msg: FromWorker) => {
      const job = this.job;
      if (!job || msg.jid !== job.jid) return;
      switch (msg.ev) {
        case 'audio':
          if (!job.over) job.sink.onAudio(msg.samples, msg.sampleRate);
          return;
        case 'done':
        case 'error': {
          this.finish();
          const wasOver = job.over;
          job.over = true;
          if (!wasOver) {
            if (msg.ev === 'done') job.sink.onDone();
            else job.sink.onError(new SpeechError(msg.code, msg.message));
          }
          onIdle(this);
          return;
        }
      }
    });
    const die = (why: string) => {
      if (this.dead) return;
      this.dead = true;
      const job = this.job;
      this.finish();
      onDead(this);
      if (job && !job.over) {
        job.over = true;
        job.sink.onError(new SpeechError('TTS_SYNTHESIS_FAILED', `flite worker died: ${why}`));
      }
    };
    this.worker.on('error', (err) => die(err.message));
    this.worker.on('exit', (code) => die(`exit code ${code}`));
  }

  start(job: FliteJob): void {
    this.job = job;
    this.worker.ref();
    const msg: ToWorker = {
      op: 'synth',
      jid: job.jid,
      voice: job.voice,
      text: job.text,
      stretch: job.stretch,
      cancel: job.cancelFlag,
    };
    this.worker.postMessage(msg);
  }

  post(msg: ToWorker): void {
    if (!this.dead) this.worker.postMessage(msg);
  }

  private finish(): void {
    this.job = null;
    if (!this.dead) this.worker.unref();
  }
}

export class FlitePool {
  private readonly slots: (WorkerSlot | null)[];
  private readonly queue: FliteJob[] = [];
  private closed = false;

  constructor(
    private readonly addonPath: string,
    size: number = Math.min(2, availableParallelism()),
  ) {
    this.slots = Array.from({ length: Math.max(1, size) }, () => null);
  }

  /** Queue a piece; the sink hears its audio in order, then onDone or onError. */
  submit(voice: string, text: string, stretch: number, sink: JobSink): FliteJob {
    const job = new FliteJob(voice, text, stretch, sink);
    if (this.closed) {
      job.over = true;
      queueMicrotask(() => sink.onError(new SpeechError('TTS_ENGINE_CLOSED', 'flite workers are closed')));
      return job;
    }
    this.queue.push(job);
    this.dispatch();
    return job;
  }

  /** Stop a job at once: nothing more reaches its sink; a running one stops at its next block. */
  cancel(job: FliteJob): void {
    if (job.over) return;
    job.over = true;
    Atomics.store(job.cancelFlag, 0, 1);
    const queued = this.queue.indexOf(job);
    if (queued >= 0) this.queue.splice(queued, 1);
  }

  /** Start every worker and have each load the voice, so a call's first sentence is warm. */
  warm(voice: string): void {
    if (this.closed) return;
    for (let i = 0; i < this.slots.length; i++) this.slotAt(i).post({ op: 'warm', voice });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) {
      job.over = true;
      job.sink.onError(new SpeechError('TTS_ENGINE_CLOSED', 'flite workers are closed'));
    }
    const live = this.slots.filter((s): s is WorkerSlot => s !== null);
    this.slots.fill(null);
    await Promise.all(live.map((s) => terminateWorker(s.worker)));
  }

  private slotAt(i: number): WorkerSlot {
    let slot = this.slots[i] ?? null;
    if (!slot || slot.dead) {
      slot = new WorkerSlot(
        this.addonPath,
        () => this.dispatch(),
        (dead) => {
          const at = this.slots.indexOf(dead);
          if (at >= 0) this.slots[at] = null;
          this.dispatch();
        },
      );
      this.slots[i] = slot;
    }
    return slot;
  }

  private dispatch(): void {
    while (!this.closed && this.queue.length > 0) {
      const slot = this.idleSlot();
      if (!slot) return;
      const job = this.queue.shift();
      if (job) slot.start(job);
    }
  }

  /** A started idle worker first; otherwise start one in a free slot. */
  private idleSlot(): WorkerSlot | null {
    const idle = this.slots.find((s) => s !== null && !s.dead && s.job === null);
    if (idle) return idle;
    const free = this.slots.findIndex((s) => s === null || s.dead);
    return free >= 0 ? this.slotAt(free) : null;
  }
}

// One pool per addon path for the whole process, shared by every engine that uses it.
const shared = new Map<string, { pool: FlitePool; users: number }>();

export function acquirePool(addonPath: string): FlitePool {
  const entry = shared.get(addonPath) ?? { pool: new FlitePool(addonPath), users: 0 };
  entry.users++;
  shared.set(addonPath, entry);
  return entry.pool;
}

/** The last engine to let go stops the workers. */
export async function releasePool(addonPath: string): Promise<void> {
  const entry = shared.get(addonPath);
  if (!entry) return;
  entry.users--;
  if (entry.users > 0) return;
  shared.delete(addonPath);
  await entry.pool.close();
}
