// One Moonshine recogniser per machine for several service processes (WORKERS > 1). Each service
// process starting its own worker threads puts twice the threads on the same cores and a copy of
// each model in every process; instead one recogniser process, started by the cluster's primary,
// holds the threads and the models, and the service processes send it their utterances:
//
//   service process ──IPC──▶ primary (relays, knows which worker asked) ──IPC──▶ recogniser process
//
// The recogniser runs in a process of its own, not in the primary, so that a native crash in a
// model's thread ends only the readings under way (the calls fail as with a crashed thread), never
// the supervisor. A recogniser that died is started again by the next service process that needs it.
import { fork, type ChildProcess } from 'node:child_process';
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { z } from 'zod';
import { SttError, type SttErrorCode } from '../errors.ts';
import type { UtteranceReader } from './reader.ts';
import { MOONSHINE_SIZE_NAMES, type MoonshineSize } from './recogniser.ts';

/** Set by the primary in each service process's environment when the machine shares one recogniser. */
export const MACHINE_RECOGNISER_ENV = 'VOICECALL_MACHINE_RECOGNISER';

const Model = z.enum(MOONSHINE_SIZE_NAMES);
/** Codes come from our own recogniser process: any STT_ code it sends is one of ours. */
const ErrorCode = z.custom<SttErrorCode>((v) => typeof v === 'string' && v.startsWith('STT_'));

/** A service process asks. */
export const RecogniserRequest = z.discriminatedUnion('type', [
  z.object({ type: z.literal('voicecall:stt-open'), model: Model }),
  z.object({
    type: z.literal('voicecall:stt-read'),
    id: z.number().int(),
    model: Model,
    samples: z.custom<Int16Array>((v) => v instanceof Int16Array),
    sampleRate: z.number().int().positive(),
    phrases: z.array(z.string()),
  }),
  z.object({ type: z.literal('voicecall:stt-cancel'), id: z.number().int() }),
]);
export type RecogniserRequest = z.infer<typeof RecogniserRequest>;

/** The recogniser (or, for a crash, the primary) answers. */
export const RecogniserAnswer = z.discriminatedUnion('type', [
  z.object({ type: z.literal('voicecall:stt-opened'), model: Model }),
  z.object({ type: z.literal('voicecall:stt-open-failed'), model: Model, code: ErrorCode, message: z.string() }),
  z.object({ type: z.literal('voicecall:stt-text'), id: z.number().int(), text: z.string() }),
  z.object({ type: z.literal('voicecall:stt-error'), id: z.number().int(), code: ErrorCode, message: z.string() }),
  z.object({ type: z.literal('voicecall:stt-crashed'), message: z.string() }),
]);
export type RecogniserAnswer = z.infer<typeof RecogniserAnswer>;

/**
 * Between the primary and the recogniser process: a request with the worker it came from, an answer with the worker it
 * goes to.
 */
export const ToRecogniser = z.union([
  z.object({ from: z.number().int(), request: RecogniserRequest }),
  /** The worker is gone: its readings are dropped. */
  z.object({ gone: z.number().int() }),
]);
export const FromRecogniser = z.object({ to: z.number().int(), answer: RecogniserAnswer });

/**
 * In the primary: relays service processes' requests to the recogniser process, starting it on
 * the first request and again after it died, and tells every worker when it died. Needs advanced
 * IPC serialization (cluster.setupPrimary) so audio crosses as an Int16Array.
 */
export function relayMachineRecogniser(log: Logger): { stop(): Promise<void> } {
  let child: ChildProcess | null = null;
  let stopping = false;

  const start = (): ChildProcess => {
    const started = fork(new URL('./recogniser-process.ts', import.meta.url), [], {
      serialization: 'advanced',
      execArgv: process.execArgv,
    });
    started.on('message', (message: unknown) => {
      const parsed = FromRecogniser.safeParse(message);
      if (parsed.success) cluster.workers?.[parsed.data.to]?.send(parsed.data.answer);
    });
    started.on('exit', (code, signal) => {
      if (child === started) child = null;
      if (stopping) return;
      log.error(
        { code, signal },
        'the machine recogniser died; readings under way fail, and the next call starts it again',
      );
      const crashed: RecogniserAnswer = {
        type: 'voicecall:stt-crashed',
        message: `the machine recogniser died (${signal ?? `exit code ${code}`})`,
      };
      for (const worker of Object.values(cluster.workers ?? {})) worker?.send(crashed);
    });
    log.info({ pid: started.pid }, 'machine recogniser started');
    return started;
  };

  const onWorkerMessage = (worker: Worker, message: unknown): void => {
    const parsed = RecogniserRequest.safeParse(message);
    if (!parsed.success || stopping) return;
    // A cancel needs no recogniser: if none runs, nothing is being read.
    if (parsed.data.type === 'voicecall:stt-cancel' && !child) return;
    child ??= start();
    child.send({ from: worker.id, request: parsed.data });
  };
  const onWorkerExit = (worker: Worker): void => {
    child?.send({ gone: worker.id });
  };
  cluster.on('message', onWorkerMessage);
  cluster.on('exit', onWorkerExit);

  return {
    async stop() {
      stopping = true;
      cluster.off('message', onWorkerMessage);
      cluster.off('exit', onWorkerExit);
      const running = child;
      if (!running || running.exitCode !== null) return;
      await new Promise<void>((resolve) => {
        running.once('exit', () => resolve());
        running.kill('SIGTERM');
      });
    },
  };
}

interface Pending {
  model: MoonshineSize;
  resolve(text: string): void;
  reject(err: SttError): void;
}

/**
 * In a service process: the machine recogniser's side of this process, one per process. Every
 * model's reader shares it (one message listener, ids unique in the process).
 */
export class RecogniserLink {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly opening = new Map<
    MoonshineSize,
    { promise: Promise<void>; resolve(): void; reject(err: SttError): void }
  >();
  private readonly opened = new Set<MoonshineSize>();

  constructor(private readonly send: (request: RecogniserRequest) => void) {}

  /** One answer from the primary; anything else on the channel is not ours. */
  onMessage(message: unknown): void {
    const parsed = RecogniserAnswer.safeParse(message);
    if (!parsed.success) return;
    const answer = parsed.data;
    switch (answer.type) {
      case 'voicecall:stt-opened':
        this.opened.add(answer.model);
        this.opening.get(answer.model)?.resolve();
        this.opening.delete(answer.model);
        return;
      case 'voicecall:stt-open-failed':
        this.opening.get(answer.model)?.reject(new SttError(answer.code, answer.message));
        this.opening.delete(answer.model);
        return;
      case 'voicecall:stt-text':
        this.take(answer.id)?.resolve(answer.text);
        return;
      case 'voicecall:stt-error':
        this.take(answer.id)?.reject(new SttError(answer.code, answer.message));
        return;
      case 'voicecall:stt-crashed': {
        const err = new SttError('STT_ENGINE_CRASHED', answer.message);
        this.opened.clear();
        for (const open of this.opening.values()) open.reject(err);
        this.opening.clear();
        for (const id of [...this.pending.keys()]) this.take(id)?.reject(err);
        return;
      }
    }
  }

  ready(model: MoonshineSize): Promise<void> {
    if (this.opened.has(model)) return Promise.resolve();
    let open = this.opening.get(model);
    if (!open) {
      let resolve!: () => void;
      let reject!: (err: SttError) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      open = { promise, resolve, reject };
      this.opening.set(model, open);
      this.send({ type: 'voicecall:stt-open', model });
    }
    return open.promise;
  }

  read(
    model: MoonshineSize,
    samples: Int16Array,
    sampleRate: number,
    phrases: readonly string[],
    signal?: AbortSignal,
  ): Promise<string> {
    if (signal?.aborted) return Promise.reject(new SttError('STT_ABORTED', 'transcription cancelled'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        if (!this.pending.delete(id)) return;
        this.send({ type: 'voicecall:stt-cancel', id });
        reject(new SttError('STT_ABORTED', 'transcription cancelled'));
      };
      this.pending.set(id, {
        model,
        resolve: (text) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(text);
        },
        reject: (err) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      this.send({ type: 'voicecall:stt-read', id, model, samples, sampleRate, phrases: [...phrases] });
    });
  }

  private take(id: number): Pending | undefined {
    const found = this.pending.get(id);
    this.pending.delete(id);
    return found;
  }

  /** Fails what this process is waiting for from `model` (its engine is closing). */
  fail(model: MoonshineSize, err: SttError): void {
    this.opening.get(model)?.reject(err);
    this.opening.delete(model);
    this.opened.delete(model);
    for (const [id, pending] of [...this.pending.entries()]) {
      if (pending.model !== model) continue;
      this.send({ type: 'voicecall:stt-cancel', id });
      this.take(id)?.reject(err);
    }
  }
}

let link: RecogniserLink | null = null;

/** Whether this process is a service worker told by its primary to use the machine's recogniser. */
export function usesMachineRecogniser(): boolean {
  return cluster.isWorker && process.env[MACHINE_RECOGNISER_ENV] === '1' && typeof process.send === 'function';
}

/** In a service process: a reader of `model` that the machine's recogniser process serves. */
export function machineReader(model: MoonshineSize): UtteranceReader {
  if (!link) {
    const send = process.send?.bind(process);
    if (!send) throw new SttError('STT_CONFIG_INVALID', 'the machine recogniser needs an IPC channel to the primary');
    const created = new RecogniserLink((request) => void send(request));
    process.on('message', (message: unknown) => created.onMessage(message));
    link = created;
  }
  const shared = link;
  return {
    model,
    ready: () => shared.ready(model),
    read: (samples, sampleRate, phrases, signal) => shared.read(model, samples, sampleRate, phrases, signal),
    close: async () => shared.fail(model, new SttError('STT_ENGINE_CRASHED', 'moonshine engine closed')),
  };
}
