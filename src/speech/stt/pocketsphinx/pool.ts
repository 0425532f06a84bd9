// A small pool of decoder worker threads. A stream is pinned to one worker for its life (its
// decoder lives there); new streams go to the least loaded worker. A worker that dies fails
// every stream and request on it with STT_ENGINE_CRASHED, and the next open() starts a fresh one.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { SttResult } from '../../types.ts';
import { terminateWorker } from '../../worker-exit.ts';
import { SttError } from '../errors.ts';
import type { FromWorker, ToWorker } from './protocol.ts';

export interface StreamSink {
  onPartial(text: string): void;
  /** The worker is gone or the decoder failed: the stream is dead. */
  onFatal(err: SttError): void;
}

interface Pending {
  resolve: (result: SttResult | null) => void;
  reject: (err: SttError) => void;
}

export class WorkerSlot {
  readonly worker: Worker;
  readonly sinks = new Map<number, StreamSink>();
  private readonly pending = new Map<number, Pending>();
  private nextReq = 1;
  dead = false;

  constructor(onDead: (slot: WorkerSlot) => void) {
    this.worker = new Worker(new URL('./worker-entry.mjs', import.meta.url));
    this.worker.unref();
    this.worker.on('message', (msg: FromWorker) => this.onMessage(msg));
    const die = (why: string) => {
      if (this.dead) return;
      this.dead = true;
      onDead(this);
      const err = new SttError('STT_ENGINE_CRASHED', `pocketsphinx worker died: ${why}`);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      for (const sink of this.sinks.values()) sink.onFatal(err);
      this.sinks.clear();
    };
    this.worker.on('error', (err) => die(err.message));
    this.worker.on('exit', (code) => die(`exit code ${code}`));
  }

  post(msg: ToWorker, transfer?: ArrayBuffer[]): void {
    if (!this.dead) this.worker.postMessage(msg, transfer);
  }

  /** Send a request that the worker answers with ok/final/error. */
  request(build: (req: number) => ToWorker): Promise<SttResult | null> {
    if (this.dead) return Promise.reject(new SttError('STT_ENGINE_CRASHED', 'pocketsphinx worker is gone'));
    const req = this.nextReq++;
    return new Promise((resolve, reject) => {
      this.pending.set(req, { resolve, reject });
      this.worker.postMessage(build(req));
    });
  }

  private onMessage(msg: FromWorker): void {
    switch (msg.ev) {
      case 'partial':
        this.sinks.get(msg.sid)?.onPartial(msg.text);
        return;
      case 'ok':
      case 'final': {
        const p = this.pending.get(msg.req);
        this.pending.delete(msg.req);
        p?.resolve(msg.ev === 'final' ? msg.result : null);
        return;
      }
      case 'error': {
        const err = new SttError(msg.code, msg.message);
        const p = msg.req === null ? undefined : this.pending.get(msg.req);
        if (p && msg.req !== null) {
          this.pending.delete(msg.req);
          p.reject(err);
        }
        // A decoder that threw mid-stream is in an unknown state: the stream is done.
        if (msg.code === 'STT_ENGINE_CRASHED') {
          const sink = this.sinks.get(msg.sid);
          this.sinks.delete(msg.sid);
          sink?.onFatal(err);
        }
        return;
      }
    }
  }

  terminate(): Promise<void> {
    this.dead = true;
    return terminateWorker(this.worker);
  }
}

export class WorkerPool {
  private readonly slots: (WorkerSlot | null)[];

  constructor(size: number = Math.min(2, availableParallelism())) {
    this.slots = Array.from({ length: Math.max(1, size) }, () => null);
  }

  get size(): number {
    return this.slots.length;
  }

  /** The least loaded live worker, starting one where a slot is empty or dead. */
  pick(): WorkerSlot {
    let best: WorkerSlot | null = null;
    for (let i = 0; i < this.slots.length; i++) {
      let slot = this.slots[i] ?? null;
      if (!slot || slot.dead) {
        slot = new WorkerSlot((dead) => {
          const at = this.slots.indexOf(dead);
          if (at >= 0) this.slots[at] = null;
        });
        this.slots[i] = slot;
      }
      if (!best || slot.sinks.size < best.sinks.size) best = slot;
    }
    if (!best) throw new SttError('STT_ENGINE_CRASHED', 'no pocketsphinx worker');
    return best;
  }

  /** Kill every worker as a native fault would (tests of crash handling). */
  crashAll(): void {
    for (const slot of this.slots) slot?.post({ op: 'crash' });
  }

  async close(): Promise<void> {
    const live = this.slots.filter((s): s is WorkerSlot => s !== null);
    this.slots.fill(null);
    await Promise.all(live.map((s) => s.terminate()));
  }
}
